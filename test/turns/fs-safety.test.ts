/**
 * Filesystem safety by construction (issue 13, docs/security.md#filesystem-safety), through the real
 * server: no write Berth makes follows a link out of an environment, `.git` is refused as any
 * path component (also on capture), and git runs with a fixed safe config.
 */
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import type { OverlayPort } from "../../src/overlay/overlay-port.js";
import { materialise } from "../../src/turns/environment.js";
import { GrpcCallError } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

const utf8 = (s: string) => new TextEncoder().encode(s);

/** A directory outside every environment, with one file in it; what it holds is checked after each test. */
function outsideDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-outside-"));
  writeFileSync(path.join(dir, "secret.txt"), "outside secret\n");
  return dir;
}

/** A repository whose base commit holds `escape -> outside` (a directory link) and `leak.txt -> outside/secret.txt`. */
function repoWithLinks(outside: string): { dir: string; head: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-links-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  mkdirSync(path.join(dir, "src"));
  writeFileSync(path.join(dir, "src", "main.ts"), "export const x = 1;\n");
  writeFileSync(path.join(dir, "README.md"), "# links\n");
  symlinkSync(outside, path.join(dir, "escape"));
  symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "leak.txt"));
  symlinkSync("src/main.ts", path.join(dir, "main-link.ts"));
  git("add", "-A");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "links");
  return { dir, head: git("rev-parse", "HEAD") };
}

function fieldViolations(err: unknown): { field: string; reason: string; description: string }[] {
  if (!(err instanceof GrpcCallError)) throw err;
  return err.badRequest?.fieldViolations.map((v) => ({ field: v.field, reason: v.reason, description: v.description })) ?? [];
}

async function violationsOf(call: Promise<unknown>): Promise<{ code: string; violations: ReturnType<typeof fieldViolations> }> {
  try {
    await call;
  } catch (err) {
    return { code: (err as GrpcCallError).codeName, violations: fieldViolations(err) };
  }
  throw new Error("expected the call to fail");
}

describe("filesystem safety", () => {
  let b: TurnBerth;
  let outside: string;
  let repo: { dir: string; head: string };
  /** Entries the wrapped overlay adds to what materialise is given (an overlay row WriteFile would now refuse). */
  let crafted: { path: string; content: Uint8Array | null }[] = [];

  beforeAll(async () => {
    outside = outsideDir();
    repo = repoWithLinks(outside);
    b = await startTurnBerth({
      instances: 1,
      wrapOverlay: (real: OverlayPort): OverlayPort => ({
        writeFile: (i) => real.writeFile(i),
        deleteFile: (i) => real.deleteFile(i),
        readBase: (ws, p) => real.readBase(ws, p),
        usage: (ws) => real.usage(ws),
        entries: async (ws) => [...(await real.entries(ws)), ...crafted.map((c) => ({ ...c, hash: null }))],
      }),
    });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(outside, { recursive: true, force: true });
    rmSync(repo.dir, { recursive: true, force: true });
  });

  const outsideNow = () => readdirSync(outside).sort();

  it("refuses WriteFile and DeleteFile through a committed symlink (FAILED_PRECONDITION PATH_TRAVERSES_SYMLINK); BeginTurn writes nothing outside", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    for (const p of ["escape/owned.txt", "escape/deep/er/owned.txt"]) {
      const f = await failure(b.ws.writeFile({ sessionId, path: p, content: utf8("owned\n") }));
      expect(f, p).toMatchObject({ code: "FAILED_PRECONDITION", reason: "PATH_TRAVERSES_SYMLINK", metadata: { path: p, symlink: "escape", field: "path" } });
    }
    expect(await failure(b.ws.deleteFile({ sessionId, path: "escape/secret.txt" }))).toMatchObject({ code: "FAILED_PRECONDITION", reason: "PATH_TRAVERSES_SYMLINK" });
    // A write onto a link replaces the link by a file: its target is never written.
    await b.ws.writeFile({ sessionId, path: "leak.txt", content: utf8("mine\n") });
    await b.ws.writeFile({ sessionId, path: "src/ok.ts", content: utf8("export const ok = 1;\n") });

    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    expect(outsideNow()).toEqual(["secret.txt"]);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
    expect(lstatSync(path.join(env, "leak.txt")).isFile()).toBe(true);
    expect(readFileSync(path.join(env, "leak.txt"), "utf8")).toBe("mine\n");
    expect(lstatSync(path.join(env, "escape")).isSymbolicLink()).toBe(true);
    expect(readFileSync(path.join(env, "src", "ok.ts"), "utf8")).toBe("export const ok = 1;\n");
    await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("a workspace that deleted a committed link may write below that path: a directory of its own", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    await b.ws.deleteFile({ sessionId, path: "escape" });
    await b.ws.deleteFile({ sessionId, path: "leak.txt" });
    await b.ws.writeFile({ sessionId, path: "escape/owned.txt", content: utf8("mine now\n") });
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    expect(lstatSync(path.join(env, "escape")).isDirectory()).toBe(true);
    expect(readFileSync(path.join(env, "escape", "owned.txt"), "utf8")).toBe("mine now\n");
    expect(existsSync(path.join(env, "leak.txt"))).toBe(false);
    expect(outsideNow()).toEqual(["secret.txt"]);
    await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("an agent that replaces a committed link by a directory: EndTurn CAPTURE_INCOMPLETE until the link is deleted, then captured", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    const t = await b.turns.beginTurn({ sessionId });
    rmSync(path.join(t.environmentPath, "escape"));
    mkdirSync(path.join(t.environmentPath, "escape"));
    writeFileSync(path.join(t.environmentPath, "escape", "mine.txt"), "inside\n");
    const f = await failure(b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "CAPTURE_INCOMPLETE", metadata: { paths: "escape/mine.txt", reason: "PATH_TRAVERSES_SYMLINK" } });
    await b.ws.deleteFile({ sessionId, path: "escape" });
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual(["escape/mine.txt"]);
    expect(outsideNow()).toEqual(["secret.txt"]);
  });

  it("materialises committed symlinks as symlinks, never following them", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    expect(lstatSync(path.join(env, "escape")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(env, "escape"))).toBe(outside);
    expect(lstatSync(path.join(env, "leak.txt")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(env, "main-link.ts"))).toBe("src/main.ts");
    // The links are not files of the overlay: an EndTurn captures nothing of them.
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual([]);
  });

  it("BeginTurn leaves out an overlay entry below a committed link (as if a row existed from before the rule) and writes nothing outside", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    crafted = [
      { path: "escape/owned.txt", content: utf8("owned\n") },
      { path: "escape/secret.txt", content: null },
      { path: "leak.txt", content: utf8("replaces the link, not its target\n") },
    ];
    try {
      const t = await b.turns.beginTurn({ sessionId });
      expect(outsideNow()).toEqual(["secret.txt"]);
      expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
      // A link at the entry's own path is replaced by the file (removed, not written through).
      expect(lstatSync(path.join(t.environmentPath, "leak.txt")).isFile()).toBe(true);
      expect(lstatSync(path.join(t.environmentPath, "escape")).isSymbolicLink()).toBe(true);
      const left = b.logs.filter((l) => String(l.msg).includes("left out of the environment")).map((l) => [l.path, l.reason]);
      expect(left).toEqual(expect.arrayContaining([["escape/owned.txt", "SYMLINK_IN_PATH"], ["escape/secret.txt", "SYMLINK_IN_PATH"]]));
      await b.turns.cancelTurn({ turnId: t.turnId });
    } finally {
      crafted = [];
    }
  });

  it("materialise() itself never writes through a link, whatever entries it is given", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "berth-mat-"));
    const skipped: [string, string][] = [];
    try {
      const env = await materialise({
        root,
        workspaceId: "00000000-0000-4000-8000-000000000001",
        sourcePath: repo.dir,
        baseCommit: repo.head,
        branch: "berth/test",
        entries: [
          { path: "escape/owned.txt", content: utf8("owned\n") },
          { path: "escape/new/dir/owned.txt", content: utf8("owned\n") },
          { path: "escape/secret.txt", content: null },
          { path: "escape/../../owned.txt", content: utf8("owned\n") },
          { path: "/tmp/owned.txt", content: utf8("owned\n") },
          { path: "src/.git/config", content: utf8("[core]\n\tfsmonitor = /bin/false\n") },
          { path: "src/fine.ts", content: utf8("fine\n") },
        ],
        onSkipped: (p, reason) => skipped.push([p, reason]),
      });
      expect(outsideNow()).toEqual(["secret.txt"]);
      expect(existsSync(path.join(tmpdir(), "owned.txt"))).toBe(false);
      expect(existsSync(path.join(root, "owned.txt"))).toBe(false);
      expect(existsSync(path.join(env.path, "src", ".git"))).toBe(false);
      expect(readFileSync(path.join(env.path, "src", "fine.ts"), "utf8")).toBe("fine\n");
      expect(skipped).toEqual([
        ["escape/owned.txt", "SYMLINK_IN_PATH"],
        ["escape/new/dir/owned.txt", "SYMLINK_IN_PATH"],
        ["escape/secret.txt", "SYMLINK_IN_PATH"],
        ["escape/../../owned.txt", "PARENT_SEGMENT"],
        ["/tmp/owned.txt", "ABSOLUTE_PATH"],
        ["src/.git/config", "GIT_DIRECTORY"],
      ]);
      expect(env.manifest.has("escape/owned.txt")).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("refuses .git as any path component, in any case (INVALID_ARGUMENT GIT_DIRECTORY naming the field and value)", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    for (const p of ["src/.git/config", ".GIT/config", "a/.Git/hooks/x", ".git/hooks/post-checkout", "a/.git./config", "a/.git  /config", "a/.g\u200cit/config", "GIT~1/config", "x/.git"]) {
      const w = await violationsOf(b.ws.writeFile({ sessionId, path: p, content: utf8("x") }));
      expect(w.code, p).toBe("INVALID_ARGUMENT");
      expect(w.violations, p).toHaveLength(1);
      expect(w.violations[0], p).toMatchObject({ field: "path", reason: "GIT_DIRECTORY" });
      expect(w.violations[0]!.description, p).toContain(JSON.stringify(p));
      expect((await violationsOf(b.ws.deleteFile({ sessionId, path: p }))).violations[0]?.reason, p).toBe("GIT_DIRECTORY");
    }
    // Names that only look like it are files like any other.
    for (const p of [".github/workflows/ci.yml", "src/.gitignore", "a/.gitkeep", "x.git/y", "git/z"]) await b.ws.writeFile({ sessionId, path: p, content: utf8("ok\n") });
  });

  it("capture leaves out .git directories the agent made (any case) and follows no link the agent made", async () => {
    const { sessionId } = await newSession(b, repo.dir);
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    // What an agent can do in its directory during a turn.
    for (const d of ["src/.git", ".GIT", "a/.Git/hooks"]) mkdirSync(path.join(env, d), { recursive: true });
    writeFileSync(path.join(env, "src/.git/config"), "[core]\n\tfsmonitor = /tmp/evil\n");
    writeFileSync(path.join(env, ".GIT/config"), "[core]\n\thooksPath = /tmp/evil\n");
    writeFileSync(path.join(env, "a/.Git/hooks/post-checkout"), "#!/bin/sh\n");
    symlinkSync(outside, path.join(env, "out"));
    writeFileSync(path.join(env, "out", "x"), "written by the agent through its own link\n");
    symlinkSync(path.join(outside, "secret.txt"), path.join(env, "peek.txt"));
    symlinkSync(outside, path.join(env, "src", "nested-out"));
    writeFileSync(path.join(env, "kept.txt"), "a real file\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual(["kept.txt"]);
    // Reported, never read.
    expect(ended.leftOut.filter((l) => l.reason === "git_directory").map((l) => l.path).sort()).toEqual([".GIT/", "a/.Git/", "src/.git/"]);

    const listed = (await b.ws.listFiles({ sessionId, pageSize: 1000 })).entries.map((f) => f.path);
    expect(listed.filter((p) => /git\/|git$/i.test(p) || p.startsWith("out") || p.startsWith("peek") || p.includes("nested-out"))).toEqual([]);
    for (const p of ["out/x", "peek.txt", "src/nested-out/secret.txt"]) expect((await failure(b.ws.readFile({ sessionId, path: p }))).code, p).toBe("NOT_FOUND");
    // Nothing outside but what the agent itself wrote there.
    expect(outsideNow()).toEqual(["secret.txt", "x"]);
    rmSync(path.join(outside, "x"));
  });
});

describe("git runs with a fixed safe config", () => {
  let b: TurnBerth;
  let dir: string;
  let marker: string;
  let globalConfig: string;
  const saved = process.env.GIT_CONFIG_GLOBAL;

  beforeAll(async () => {
    const work = mkdtempSync(path.join(tmpdir(), "berth-gitcfg-"));
    marker = path.join(work, "marker");
    const script = path.join(work, "run.sh");
    // Records that it ran, and passes content through (a smudge filter must output the file).
    writeFileSync(script, `#!/bin/sh\necho "$0 $*" >> ${marker}\ncat\n`, { mode: 0o755 });
    dir = path.join(work, "repo");
    mkdirSync(dir);
    const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
    git("init", "-q", "-b", "main");
    writeFileSync(path.join(dir, ".gitattributes"), "* filter=evil\n*.md filter=globalevil\n");
    writeFileSync(path.join(dir, "README.md"), "# fixture\n");
    writeFileSync(path.join(dir, "a.ts"), "export const a = 1;\n");
    git("add", "-A");
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "base");
    // Set after the commit: from here on, any git that reads this config runs the script.
    for (const [k, v] of [
      ["core.fsmonitor", script],
      ["core.hooksPath", path.join(work, "hooks")],
      ["filter.evil.smudge", script],
      ["filter.evil.process", script],
      ["filter.evil.required", "true"],
      ["log.showSignature", "true"],
      ["gpg.program", script],
    ]) git("config", k!, v!);
    mkdirSync(path.join(work, "hooks"));
    for (const h of ["post-checkout", "pre-commit", "reference-transaction"]) writeFileSync(path.join(work, "hooks", h), `#!/bin/sh\necho hook >> ${marker}\n`, { mode: 0o755 });
    // A "global" config the server's environment points at: ignored too.
    globalConfig = path.join(work, "global.gitconfig");
    writeFileSync(globalConfig, `[filter "globalevil"]\n\tsmudge = ${script}\n\trequired = true\n`);
    process.env.GIT_CONFIG_GLOBAL = globalConfig;
    b = await startTurnBerth({ instances: 1 });
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.GIT_CONFIG_GLOBAL;
    else process.env.GIT_CONFIG_GLOBAL = saved;
    await b?.close();
    rmSync(path.dirname(dir), { recursive: true, force: true });
  });

  it("registers, reads and materialises a repository whose config names programs, and none of them runs", async () => {
    const { sessionId } = await newSession(b, dir);
    expect(Buffer.from((await b.ws.readFile({ sessionId, path: "a.ts" })).content).toString()).toBe("export const a = 1;\n");
    await b.ws.writeFile({ sessionId, path: "b.ts", content: utf8("export const b = 2;\n") });
    const t = await b.turns.beginTurn({ sessionId });
    expect(readFileSync(path.join(t.environmentPath, "README.md"), "utf8")).toBe("# fixture\n");
    writeFileSync(path.join(t.environmentPath, "c.ts"), "export const c = 3;\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.FAILED });
    expect(ended.capturedPaths).toEqual(["c.ts"]);
    expect(existsSync(marker) ? readFileSync(marker, "utf8") : "").toBe("");
  });
});
