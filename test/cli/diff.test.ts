/**
 * berth diff and berth rebase, run as the real binary against a real server: the printed patch
 * applies with `git apply` to a clean checkout of the base, and a rebase moves the base.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { berth, berthJson, gitFixture } from "./helpers.js";

let server: TestBerth;
let url: string;
let src: string;
let repoId: string;
const run = (...args: string[]) => berth([...args, "--server", url]);
const git = (...args: string[]) => execFileSync("git", ["-C", src, ...args], { encoding: "utf8" }).trim();

beforeAll(async () => {
  src = gitFixture();
  server = await startBerth();
  url = server.server.httpUrl;
  repoId = (await server.grpc.registerRepository({ name: "cli-diff", sourcePath: src })).repository!.id;
});
afterAll(async () => {
  await server?.close();
});

async function session(agentId: string): Promise<string> {
  const { workspace } = await server.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId, baseCommit: "main" });
  return workspace!.sessionId;
}

describe("berth diff and berth rebase", { timeout: 120_000 }, () => {
  it("prints a patch git apply takes, a --stat summary, and rebases onto a moved branch", async () => {
    const s = await session("cli-differ");
    const enc = new TextEncoder();
    await server.grpc.writeFile({ sessionId: s, path: "README.md", content: enc.encode("# fixture\nmore\n") });
    await server.grpc.writeFile({ sessionId: s, path: "new.txt", content: enc.encode("new\n") });

    const d = await run("diff", s);
    expect(d.code).toBe(0);
    expect(d.stdout).toContain("diff --git a/README.md b/README.md");
    const dir = mkdtempSync(path.join(tmpdir(), "berth-cli-apply-"));
    execFileSync("git", ["clone", "-q", src, dir]);
    execFileSync("git", ["-C", dir, "apply", "-"], { input: d.stdout });
    expect(readFileSync(path.join(dir, "README.md"), "utf8")).toBe("# fixture\nmore\n");
    expect(readFileSync(path.join(dir, "new.txt"), "utf8")).toBe("new\n");

    const stat = await run("diff", s, "--stat");
    expect(stat.stdout.trim().split("\n")).toEqual(["+1 -0\tREADME.md", "+1 -0\tnew.txt"]);
    const viaJson = await berthJson<{ paths: { path: string }[] }>(["diff", s, "--server", url]);
    expect(viaJson.paths.map((p) => p.path)).toEqual(["README.md", "new.txt"]);

    // main moves on; the session follows it.
    writeFileSync(path.join(src, "index.ts"), "export const answer = 43;\n");
    git("commit", "-q", "-am", "upstream");
    const head = git("rev-parse", "HEAD");
    const r = await run("rebase", s, "--onto", "main");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^new base\\s+${head}$`, "m"));
    expect((await server.grpc.getWorkspace({ sessionId: s })).workspace?.baseCommit).toBe(head);

    const bad = await run("rebase", s, "--onto", "nowhere");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("onto");
  });
});
