/**
 * The README's tour with the berth command, run as written: the commands are read from its
 * "The tour with the berth command" block and run with sh against a real server and a real git
 * repository, the ids the README abbreviates (5e2b…, c9f0…, …) replaced by those the commands
 * before printed, and `… &` run in the background as a shell would.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { BIN, ROOT } from "../cli/helpers.js";
import { run } from "./helpers.js";

/** The tour's commands, comments and blank lines left out. */
function tourCommands(): string[] {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## The tour with the berth command"), readme.indexOf("## The contract"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  return block.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
}

/** The value of a "key  value" line of the command's output. */
function field(stdout: string, key: string): string {
  const m = new RegExp(`^${key}\\s+(\\S+)`, "m").exec(stdout);
  if (!m) throw new Error(`no "${key}" in:\n${stdout}`);
  return m[1]!;
}

describe("the README's berth command tour", () => {
  let berth: TestBerth;
  let dir: string;
  beforeAll(async () => {
    berth = await startBerth({ env: { BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-tour-envs-")) } });
    dir = mkdtempSync(path.join(tmpdir(), "berth-tour-"));
    rmSync(dir, { recursive: true });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("runs every command of the tour: two agents, files, claims, a turn, strand and resume while attached, and the merged commit", { timeout: 240_000 }, async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      BERTH_SERVER: berth.server.httpUrl,
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    };
    delete env["BERTH_TOKEN"];
    const vars: Record<string, string> = { "/tmp/berth-tour": dir, "npx berth": `${process.execPath} ${BIN}` };
    const commands = tourCommands();
    expect(commands.some((c) => c.includes("berth attach"))).toBe(true);

    let attach: { lines: string[]; exited: Promise<number | null>; stderr: () => string } | undefined;
    let workspaces = 0;
    let last = "";
    for (const command of commands) {
      let cmd = command;
      for (const [k, v] of Object.entries(vars)) cmd = cmd.replaceAll(k, v);
      if (cmd.endsWith(" &")) {
        const child = spawn("sh", ["-c", cmd.slice(0, -2)], { env, stdio: ["ignore", "pipe", "pipe"] });
        const lines: string[] = [];
        let stderr = "";
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        const firstLine = new Promise<void>((resolve) => createInterface({ input: child.stdout }).on("line", (l) => (lines.push(l), resolve())));
        attach = { lines, exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))), stderr: () => stderr };
        await firstLine;
        continue;
      }
      const r = await run("sh", ["-c", cmd], { env });
      expect(r.code, `${cmd}\n${r.stderr}`).toBe(0);
      last = r.stdout;
      if (command.includes("berth workspace create")) {
        const [session, changeset] = [field(r.stdout, "session"), field(r.stdout, "changeset")];
        if (workspaces++ === 0) Object.assign(vars, { "5e2b…": session, "c9f0…": changeset });
        else vars["7d41…"] = session;
      }
      if (command.includes("berth turn begin")) vars["e3b1…"] = field(r.stdout, "turn");
      if (command.includes("berth sessions resume")) vars["9a0c…"] = field(r.stdout, "new session");
      if (command.includes("berth who-touched")) expect(r.stdout).toMatch(/modified by agent-1/);
      if (command.includes("berth claim")) {
        // Refused for the reason the tour says (the echo after || would follow any failure).
        expect(r.stdout).toMatch(/refused: agent-1 holds it/);
        expect(r.stderr).toMatch(/SYMBOL_LOCKED/);
      }
      if (command.includes("berth file cat")) expect(r.stdout).toBe("hello\n");
      if (command.includes("berth sessions strand")) {
        // The attach held the ephemeral session until it was stranded under it, and then said so.
        expect(await attach!.exited).toBe(1);
        expect(attach!.stderr()).toMatch(/is no longer active/);
      }
    }
    expect(attach!.lines[0]).toMatch(new RegExp(`^attached to session ${vars["5e2b…"]}`));
    const lines = last.trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^[0-9a-f]+ Say hello$/);
    expect(lines[1]).toMatch(/^[0-9a-f]+ start$/);
    // main is checked out in the tour's repository: the merge brought its work tree along.
    const status = await run("git", ["-C", dir, "status", "--porcelain"], { env });
    expect(status.stdout).toBe("");
    expect(readFileSync(path.join(dir, "hello.txt"), "utf8")).toBe("hello\n");
  });
});
