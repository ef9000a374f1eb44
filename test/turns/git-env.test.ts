/**
 * Environments are git checkouts (issue 15, docs/turns.md "Environments"), through the real
 * server: `git status` in an environment shows exactly the workspace's overlay, the checkout is
 * its own repository on `berth/<changeset>`, nothing is written into the source repository's
 * .git (not even by an agent's `git commit`), capture reads the changes through git, and an
 * environment root inside a repository is refused at start.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { spawnServe } from "../support/serve-process.js";
import { makeGitRepo, startTurnBerth, type TurnBerth } from "./helpers.js";

const utf8 = (s: string) => new TextEncoder().encode(s);
const decode = (b: Uint8Array) => new TextDecoder().decode(b);

/** git as an agent (or an operator) runs it: no Berth settings, a throwaway identity. */
function git(dir: string, ...args: string[]): string {
  return execFileSync("git", ["-C", dir, "-c", "user.email=agent@example.com", "-c", "user.name=agent", ...args], { encoding: "utf8", stdio: "pipe" });
}

/** `git status --porcelain` as a sorted list of lines. */
function status(dir: string): string[] {
  return git(dir, "status", "--porcelain=v1", "--untracked-files=all").split("\n").filter(Boolean).sort();
}

/**
 * Every file under `dir` (recursively) with a hash of its content and its mtime: any write shows —
 * but for the mtime of objects when `objectTimes` is false (below).
 */
function snapshot(dir: string, objectTimes = true): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const d of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(child);
      else {
        const abs = path.join(dir, child);
        const hash = createHash("sha1").update(readFileSync(abs)).digest("hex");
        out[child] = objectTimes || !child.startsWith("objects/") ? `${hash} ${statSync(abs).mtimeMs}` : hash;
      }
    }
  };
  walk("");
  return out;
}

/** A snapshot with the objects' mtimes dropped. */
function withoutObjectTimes(snap: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(snap).map(([k, v]) => [k, k.startsWith("objects/") ? v.split(" ")[0]! : v]));
}

describe("environments are git checkouts", () => {
  let b: TurnBerth;
  let source: string;
  let seq = 0;

  beforeAll(async () => {
    source = makeGitRepo(12);
    writeFileSync(path.join(source, ".gitignore"), "node_modules/\n*.log\n");
    git(source, "add", "-A");
    git(source, "commit", "-q", "-m", "gitignore");
    b = await startTurnBerth({ env: { BERTH_MAX_FILE_BYTES: "4096" } });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  async function session(captureExclude: string[] = []) {
    const repo = await b.ws.registerRepository({ name: `git-env-${process.pid}-${++seq}`, sourcePath: source, captureExclude });
    const created = (await b.ws.createWorkspace({ repoId: repo.repository!.id, agentId: `agent-${seq}`, mode: WorkspaceMode.PERSISTENT })).workspace!;
    return { sessionId: created.sessionId, changesetId: created.changesetId, baseCommit: created.baseCommit };
  }

  it("git status in the environment shows exactly the overlay: adds, modifications, deletions; its own repository on berth/<changeset> at the base", async () => {
    const { sessionId, changesetId, baseCommit } = await session();
    await b.ws.writeFile({ sessionId, path: "pkg0/mod0/file0.ts", content: utf8("export const v0 = 'changed';\n") });
    await b.ws.writeFile({ sessionId, path: "docs/new.md", content: utf8("# new\n") });
    await b.ws.deleteFile({ sessionId, path: "README.md" });
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;

    expect(status(env)).toEqual([" D README.md", " M pkg0/mod0/file0.ts", "?? docs/new.md"]);
    expect(git(env, "diff", "--", "pkg0/mod0/file0.ts")).toContain("+export const v0 = 'changed';");
    expect(git(env, "rev-parse", "--show-toplevel").trim()).toBe(realpathSync(env));
    expect(git(env, "symbolic-ref", "--short", "HEAD").trim()).toBe(`berth/${changesetId}`);
    expect(git(env, "rev-parse", "HEAD").trim()).toBe(baseCommit);
    // The marker is Berth's: present, and never shown (.git/info/exclude).
    expect(readdirSync(env)).toContain(".berth-env");
    expect(git(env, "status", "--porcelain", "--ignored", "--", ".berth-env").trim()).toBe("!! .berth-env");

    // Still exactly the overlay once the turn's own edits are captured.
    writeFileSync(path.join(env, "pkg1/mod1/file1.ts"), "export const v1 = 'edited in the turn';\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual(["pkg1/mod1/file1.ts"]);
    expect(status(env)).toEqual([" D README.md", " M pkg0/mod0/file0.ts", " M pkg1/mod1/file1.ts", "?? docs/new.md"]);
  });

  it("captures a directory the agent replaced by a file, and a file it replaced by a directory, in one EndTurn", async () => {
    const { sessionId } = await session();
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    // The base has pkg3/mod3/file3.ts (the only file under pkg3) and a file README.md.
    rmSync(path.join(env, "pkg3"), { recursive: true });
    writeFileSync(path.join(env, "pkg3"), "now a file\n");
    rmSync(path.join(env, "README.md"));
    mkdirSync(path.join(env, "README.md"));
    writeFileSync(path.join(env, "README.md", "inside.md"), "now a directory\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect([...ended.capturedPaths].sort()).toEqual(["README.md", "README.md/inside.md", "pkg3", "pkg3/mod3/file3.ts"]);
    expect(decode((await b.ws.readFile({ sessionId, path: "pkg3" })).content)).toBe("now a file\n");
    expect(decode((await b.ws.readFile({ sessionId, path: "README.md/inside.md" })).content)).toBe("now a directory\n");
    const listed = (await b.ws.listFiles({ sessionId })).entries.filter((e) => !e.deleted).map((e) => e.path);
    expect(listed.filter((p) => p.startsWith("pkg3") || p.startsWith("README.md"))).toEqual(["README.md/inside.md", "pkg3"]);
  });

  it("writes nothing into the source repository's .git, and an agent's git commit in its environment stays there (its changes are still captured)", async () => {
    const before = snapshot(path.join(source, ".git"));
    const refsBefore = git(source, "for-each-ref");
    const headBefore = git(source, "rev-parse", "HEAD");
    const { sessionId, changesetId } = await session();
    await b.ws.writeFile({ sessionId, path: "from-overlay.txt", content: utf8("overlay\n") });
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    writeFileSync(path.join(env, "pkg0/mod0/file0.ts"), "export const v0 = 'before the commit';\n");
    const first = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(first.capturedPaths).toEqual(["pkg0/mod0/file0.ts"]);
    // Berth itself (checkout, capture through git status/diff) writes nothing there, not even a time.
    expect(snapshot(path.join(source, ".git"))).toEqual(before);

    const t2 = await b.turns.beginTurn({ sessionId });
    // The agent commits its work in its environment, then keeps editing.
    writeFileSync(path.join(env, "committed.txt"), "committed by the agent\n");
    writeFileSync(path.join(env, "pkg2/mod2/file2.ts"), "export const v2 = 'committed';\n");
    rmSync(path.join(env, "pkg3/mod3/file3.ts"));
    git(env, "add", "-A");
    git(env, "commit", "-q", "-m", "agent's own commit");
    writeFileSync(path.join(env, "after-commit.txt"), "not committed\n");
    expect(git(env, "log", "--format=%s", "-1").trim()).toBe("agent's own commit");

    const ended = await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    // Against the base commit, not the agent's HEAD: the committed edits are captured too.
    expect([...ended.capturedPaths].sort()).toEqual(["after-commit.txt", "committed.txt", "pkg2/mod2/file2.ts", "pkg3/mod3/file3.ts"]);
    expect(decode((await b.ws.readFile({ sessionId, path: "committed.txt" })).content)).toBe("committed by the agent\n");
    expect(decode((await b.ws.readFile({ sessionId, path: "from-overlay.txt" })).content)).toBe("overlay\n");

    expect(git(source, "rev-parse", "HEAD")).toBe(headBefore);
    expect(git(source, "for-each-ref")).toBe(refsBefore);
    expect(git(source, "branch", "--list", `berth/${changesetId}`).trim()).toBe("");
    // An object the agent's git writes that the source already has is "freshened" there (its
    // mtime touched, so a gc keeps it): git does that through alternates. Contents, refs, index,
    // config and logs are untouched (docs/decisions.md).
    expect(snapshot(path.join(source, ".git"), false)).toEqual(withoutObjectTimes(before));
  });

  it("capture through git honours .gitignore, the repository's exclude list and the size limit, reports each in left_out, and captures an overlay path whatever the rules say", async () => {
    const { sessionId } = await session(["vendor/", "*.tmp"]);
    await b.ws.writeFile({ sessionId, path: "notes.log", content: utf8("an overlay file .gitignore matches\n") });
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    for (let i = 0; i < 20; i++) {
      mkdirSync(path.join(env, "node_modules", `p${i}`), { recursive: true });
      writeFileSync(path.join(env, "node_modules", `p${i}`, "index.js"), `module.exports = ${i};\n`);
    }
    writeFileSync(path.join(env, "debug.log"), "ignored\n");
    writeFileSync(path.join(env, "notes.log"), "changed in the turn: captured although ignored\n");
    mkdirSync(path.join(env, "vendor", "lib"), { recursive: true });
    writeFileSync(path.join(env, "vendor", "lib", "x.js"), "excluded\n");
    writeFileSync(path.join(env, "pkg4", "scratch.tmp"), "excluded\n");
    writeFileSync(path.join(env, "big.bin"), Buffer.alloc(5000, 7));
    mkdirSync(path.join(env, "src", "deep"), { recursive: true });
    writeFileSync(path.join(env, "src", "deep", "kept.ts"), "export {};\n");
    // A repository of the agent's own inside its environment: its files captured, its .git not.
    mkdirSync(path.join(env, "tools", "sub"), { recursive: true });
    git(path.join(env, "tools", "sub"), "init", "-q");
    writeFileSync(path.join(env, "tools", "sub", "tool.sh"), "echo tool\n");

    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect([...ended.capturedPaths].sort()).toEqual(["notes.log", "src/deep/kept.ts", "tools/sub/tool.sh"]);
    expect(Object.fromEntries(ended.leftOut.map((l) => [l.path, l.reason]))).toEqual({
      "node_modules/": "gitignored",
      "debug.log": "gitignored",
      "vendor/": "excluded",
      "pkg4/scratch.tmp": "excluded",
      "big.bin": "too_large",
      "tools/sub/.git/": "git_directory",
    });
    expect(decode((await b.ws.readFile({ sessionId, path: "notes.log" })).content)).toBe("changed in the turn: captured although ignored\n");

    // Deleting a file the overlay added, and restoring a base file to the base version, are changes too.
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.environmentPath).toBe(env); // warm
    rmSync(path.join(env, "src", "deep", "kept.ts"));
    writeFileSync(path.join(env, "pkg5/mod5/file5.ts"), "export const v5 = 'x';\n");
    const e2 = await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    expect([...e2.capturedPaths].sort()).toEqual(["pkg5/mod5/file5.ts", "src/deep/kept.ts"]);
    const t3 = await b.turns.beginTurn({ sessionId });
    git(env, "checkout", "--", "pkg5/mod5/file5.ts");
    const e3 = await b.turns.endTurn({ turnId: t3.turnId, outcome: TurnOutcome.COMPLETED });
    expect(e3.capturedPaths).toEqual(["pkg5/mod5/file5.ts"]);
    expect(decode((await b.ws.readFile({ sessionId, path: "pkg5/mod5/file5.ts" })).content)).toBe("export const v5 = 5;\n");
  });
});

describe("the environment root", () => {
  it("is refused at start inside a git repository (a real berth serve: exits non-zero and says why)", async () => {
    const repo = mkdtempSync(path.join(tmpdir(), "berth-root-in-repo-"));
    try {
      git(repo, "init", "-q");
      const root = path.join(repo, "var", "envs"); // not there yet: asked from the nearest existing directory
      const s = spawnServe({ BERTH_ENV_ROOT: root, BERTH_DATA_DIR: path.join(mkdtempSync(path.join(tmpdir(), "berth-root-data-")), "data") });
      expect(await s.exited).toBe(1);
      expect(s.stderr()).toContain(`BERTH_ENV_ROOT ${root} is inside the git repository ${realpathSync(repo)}`);
      expect(s.stderr()).toContain("(ENV_ROOT_IN_REPOSITORY)");
      expect(s.lines.find((l) => l.msg === "berth serving")).toBeUndefined();
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });
});
