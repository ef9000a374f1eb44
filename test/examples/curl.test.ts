/**
 * The README's curl tour, run as written: the commands are read from the README's "A one-minute
 * tour" block, pointed at a real server (port, and the repository id the first one returned),
 * and run with the system's curl. Proves Connect's JSON form works with nothing but curl.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { REQUIRE_SERVICES } from "../support/services.js";
import { run, succeeds } from "./helpers.js";
import { BIN } from "../cli/helpers.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const haveCurl = succeeds("curl", ["--version"]);
if (!haveCurl) {
  if (REQUIRE_SERVICES) throw new Error("curl is missing, and BERTH_REQUIRE_SERVICES=1 forbids skipping");
  console.warn("\n*** SKIPPED: curl is missing; the README's curl tour is not tested ***\n");
}

/** The curl commands of the README's tour (continuation lines joined), in order. */
function tourCommands(): string[] {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const tour = readme.slice(readme.indexOf("## A one-minute tour"));
  const block = /```sh\n([\s\S]*?)```/.exec(tour)![1]!;
  return block
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .filter((l) => l.startsWith("curl "));
}

/** The README's landing block (the second sh block of the tour): its commands, continuation lines joined, comments left out. */
function landingCommands(): string[] {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const tour = readme.slice(readme.indexOf("## A one-minute tour"), readme.indexOf("## The contract"));
  const block = [...tour.matchAll(/```sh\n([\s\S]*?)```/g)].find((m) => m[1]!.includes("berth merge"))![1]!;
  return block
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"));
}

describe.skipIf(!haveCurl)("the README's curl tour", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  async function curl(command: string, vars: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    let cmd = command.replaceAll("http://127.0.0.1:8080", berth.server.httpUrl);
    for (const [k, v] of Object.entries(vars)) cmd = cmd.replaceAll(k, v);
    const r = await run("sh", ["-c", `${cmd} -w '\\n%{http_code}'`]);
    expect(r.code).toBe(0);
    const nl = r.stdout.lastIndexOf("\n");
    return { status: Number(r.stdout.slice(nl + 1)), body: JSON.parse(r.stdout.slice(0, nl)) as Record<string, unknown> };
  }

  it("registers a repository, creates a workspace and shows a JSON error with details", async () => {
    const [register, create, invalid, ...rest] = tourCommands();
    expect(register).toMatch(/RegisterRepository$/);
    expect(create).toMatch(/CreateWorkspace$/);
    expect(invalid).toMatch(/CreateWorkspace$/);
    expect(rest).toEqual([]);

    const r1 = await curl(register!, {});
    expect(r1.status).toBe(200);
    const repo = r1.body["repository"] as { id: string; name: string };
    expect(repo.name).toBe("demo");
    expect(repo.id).toMatch(/^[0-9a-f-]{36}$/);

    const r2 = await curl(create!, { "4f0c…": repo.id });
    expect(r2.status).toBe(200);
    expect(r2.body["workspace"]).toMatchObject({ agentName: "agent-1", changesetState: "CHANGESET_STATE_DRAFT", agentId: "claude-7", repoId: repo.id });

    const r3 = await curl(invalid!, {});
    expect(r3.status).toBe(400);
    expect(r3.body).toMatchObject({
      code: "invalid_argument",
      details: [
        { type: "google.rpc.ErrorInfo", debug: { reason: "INVALID_ARGUMENT", domain: "berth", metadata: { field: "repo_id" } } },
        { type: "google.rpc.BadRequest", debug: { fieldViolations: [{ field: "repo_id", reason: "INVALID_UUID" }] } },
      ],
    });
    expect(r3.body["message"]).toMatch(/^invalid repo_id: must be a UUID/);
  });

  it("ends with the change landed as a commit on main, as git log shows", async () => {
    const demo = mkdtempSync(path.join(tmpdir(), "berth-demo-"));
    rmSync(demo, { recursive: true });
    const vars: Record<string, string> = { "/tmp/berth-demo": demo, "npx berth": `${process.execPath} ${BIN}` };
    const commands = landingCommands();
    expect(commands.map((c) => c.split(" ")[0])).toEqual(["git", "curl", "curl", "curl", "for", "npx", "git"]);
    let last = "";
    for (const command of commands) {
      let cmd = command.replaceAll("http://127.0.0.1:8080", berth.server.httpUrl);
      for (const [k, v] of Object.entries(vars)) cmd = cmd.replaceAll(k, v);
      const r = await run("sh", ["-c", cmd], { env: { ...process.env, BERTH_SERVER: berth.server.httpUrl, GIT_CONFIG_GLOBAL: "/dev/null", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" } });
      expect(r.code, `${cmd}\n${r.stderr}`).toBe(0);
      last = r.stdout;
      if (command.startsWith("curl ")) {
        const body = JSON.parse(r.stdout) as { repository?: { id: string }; workspace?: { sessionId: string; changesetId: string } };
        if (body.repository) vars["7a1d…"] = body.repository.id;
        if (body.workspace) Object.assign(vars, { "5e2b…": body.workspace.sessionId, "c9f0…": body.workspace.changesetId });
      }
    }
    const lines = last.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^[0-9a-f]+ \\(HEAD -> main, berth/${vars["c9f0…"]}\\) Say hello$`));
    expect(lines[1]).toMatch(/^[0-9a-f]+ start$/);
  });
});
