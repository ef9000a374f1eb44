/**
 * DiffWorkspace, DiffChangeset and deleted files (issue 15) through the real server, against a
 * real git repository: the patch is git's (`git apply` on a clean checkout of the base
 * reproduces the overlay byte for byte), with adds, modifications, deletions, a rename and a
 * binary file; ListFiles marks deleted paths and ReadFile of one answers FILE_DELETED.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileChange, FileSource, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { gitRepo, PY, text, tsModule, utf8 } from "./helpers.js";

let berth: TestBerth;
let repoId: string;
let src: { dir: string; head: string };
let agentSeq = 0;

const BINARY_BASE = new Uint8Array([0, 1, 2, 3, 255, 0, 10, 20]);
const BINARY_NEW = new Uint8Array([0, 9, 8, 7, 255, 0, 10, 21, 22]);

beforeAll(async () => {
  src = gitRepo();
  writeFileSync(path.join(src.dir, "logo.bin"), BINARY_BASE);
  writeFileSync(path.join(src.dir, "moved-from.txt"), Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join(""));
  const git = (...args: string[]) => execFileSync("git", ["-C", src.dir, ...args], { encoding: "utf8" }).trim();
  git("add", "-A");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "binary and rename source");
  src = { dir: src.dir, head: git("rev-parse", "HEAD") };
  berth = await startBerth();
  repoId = (await berth.grpc.registerRepository({ name: "diff-demo", sourcePath: src.dir })).repository!.id;
});
afterAll(async () => {
  await berth?.close();
});

async function session(changesetId?: string) {
  const { workspace } = await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: `differ-${++agentSeq}`, ...(changesetId ? { changesetId } : {}) });
  return workspace!;
}

async function hashOf(sessionId: string, p: string): Promise<string> {
  return (await berth.grpc.readFile({ sessionId, path: p })).hash;
}

/** A clean checkout of the base commit in a new directory. */
function checkout(commit: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-apply-"));
  execFileSync("git", ["clone", "-q", src.dir, dir]);
  execFileSync("git", ["-C", dir, "checkout", "-q", commit]);
  return dir;
}

describe("DiffWorkspace", () => {
  it("gives git's patch of adds, modifications, deletions, a rename and a binary file; git apply reproduces the overlay", async () => {
    const ws = await session();
    const s = ws.sessionId;
    const moved = readFileSync(path.join(src.dir, "moved-from.txt"));
    await berth.grpc.writeFile({ sessionId: s, path: "src/util.ts", content: utf8(tsModule({ alpha: 100 })) });
    await berth.grpc.writeFile({ sessionId: s, path: "docs/new.md", content: utf8("# new\nhello\n") });
    await berth.grpc.deleteFile({ sessionId: s, path: "py/tasks.py", expectedHash: await hashOf(s, "py/tasks.py") });
    await berth.grpc.deleteFile({ sessionId: s, path: "moved-from.txt", expectedHash: await hashOf(s, "moved-from.txt") });
    await berth.grpc.writeFile({ sessionId: s, path: "lib/moved-to.txt", content: moved });
    await berth.grpc.writeFile({ sessionId: s, path: "logo.bin", content: BINARY_NEW });

    const d = await berth.grpc.diffWorkspace({ sessionId: s });
    expect(d.baseCommit).toBe(src.head);
    const patch = Buffer.from(d.patch).toString("utf8");
    expect(patch).toContain("diff --git a/src/util.ts b/src/util.ts");
    expect(patch).toContain("+  return 100;");
    expect(patch).toContain("new file mode 100644");
    expect(patch).toContain("deleted file mode 100644");
    expect(patch).toContain("rename from moved-from.txt\nrename to lib/moved-to.txt");
    expect(patch).toContain("Binary files a/logo.bin and b/logo.bin differ");
    const byPath = Object.fromEntries(d.paths.map((p) => [p.path, p]));
    expect(Object.keys(byPath)).toEqual(["docs/new.md", "lib/moved-to.txt", "logo.bin", "py/tasks.py", "src/util.ts"]);
    expect(byPath["docs/new.md"]).toMatchObject({ change: FileChange.ADDED, linesAdded: 2, linesRemoved: 0, binary: false });
    expect(byPath["lib/moved-to.txt"]).toMatchObject({ change: FileChange.MODIFIED, oldPath: "moved-from.txt", linesAdded: 0, linesRemoved: 0 });
    expect(byPath["logo.bin"]).toMatchObject({ change: FileChange.MODIFIED, binary: true, linesAdded: 0 });
    expect(byPath["py/tasks.py"]).toMatchObject({ change: FileChange.DELETED, linesRemoved: PY.split("\n").length - 1 });
    expect(byPath["src/util.ts"]).toMatchObject({ change: FileChange.MODIFIED, linesAdded: 1, linesRemoved: 1, symbols: ["alpha"] });

    // The binary form: git apply reproduces every file, the binary one included.
    const full = await berth.grpc.diffWorkspace({ sessionId: s, binary: true });
    expect(Buffer.from(full.patch).toString("utf8")).toContain("GIT binary patch");
    const dir = checkout(d.baseCommit);
    execFileSync("git", ["-C", dir, "apply", "--index", "-"], { input: full.patch });
    expect(readFileSync(path.join(dir, "src/util.ts"), "utf8")).toBe(tsModule({ alpha: 100 }));
    expect(readFileSync(path.join(dir, "docs/new.md"), "utf8")).toBe("# new\nhello\n");
    expect(readFileSync(path.join(dir, "lib/moved-to.txt"))).toEqual(moved);
    expect(new Uint8Array(readFileSync(path.join(dir, "logo.bin")))).toEqual(BINARY_NEW);
    expect(existsSync(path.join(dir, "py/tasks.py"))).toBe(false);
    expect(existsSync(path.join(dir, "moved-from.txt"))).toBe(false);

    // The text form applies too, leaving the binary file as the base has it.
    const dir2 = checkout(d.baseCommit);
    const textOnly = Buffer.from(d.patch)
      .toString("utf8")
      .split(/(?=^diff --git )/m)
      .filter((part) => !part.startsWith("diff --git a/logo.bin"))
      .join("");
    execFileSync("git", ["-C", dir2, "apply", "-"], { input: textOnly });
    expect(readFileSync(path.join(dir2, "src/util.ts"), "utf8")).toBe(tsModule({ alpha: 100 }));
    // Nothing was written into the source repository's object store.
    const hashNew = execFileSync("git", ["hash-object", "--stdin"], { input: "# new\nhello\n", encoding: "utf8" }).trim();
    expect(() => execFileSync("git", ["-C", src.dir, "cat-file", "-e", hashNew], { stdio: "pipe" })).toThrow();
  });

  it("answers an empty patch for an untouched workspace", async () => {
    const ws = await session();
    const d = await berth.grpc.diffWorkspace({ sessionId: ws.sessionId });
    expect(d.patch.length).toBe(0);
    expect(d.paths).toEqual([]);
  });

  it("names a bad session id", async () => {
    const f = await failure(berth.grpc.diffWorkspace({ sessionId: "nope" }));
    expect(f).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(f.fields).toContain("session_id");
  });
});

describe("deleted files", () => {
  it("ListFiles with include_deleted marks a deleted base path (without it the path is not listed); ReadFile of it answers NOT_FOUND FILE_DELETED", async () => {
    const ws = await session();
    const s = ws.sessionId;
    await berth.grpc.deleteFile({ sessionId: s, path: "README.md", expectedHash: await hashOf(s, "README.md") });
    expect((await berth.grpc.listFiles({ sessionId: s })).entries.map((e) => e.path)).not.toContain("README.md");
    const list = await berth.grpc.listFiles({ sessionId: s, includeDeleted: true });
    const readme = list.entries.find((e) => e.path === "README.md");
    expect(readme).toMatchObject({ deleted: true, source: FileSource.OVERLAY, change: FileChange.DELETED });
    expect(list.entries.filter((e) => e.deleted).map((e) => e.path)).toEqual(["README.md"]);
    const f = await failure(berth.grpc.readFile({ sessionId: s, path: "README.md" }));
    expect(f).toMatchObject({ code: "NOT_FOUND", reason: "FILE_DELETED" });
    expect(f.message).toContain("deleted in this workspace");
    expect(f.metadata).toMatchObject({ path: "README.md" });
    // A path that never existed keeps its own answer.
    expect(await failure(berth.grpc.readFile({ sessionId: s, path: "nowhere.txt" }))).toMatchObject({ code: "NOT_FOUND", reason: "FILE_NOT_FOUND" });
    // An added-then-deleted path is in neither and is not listed.
    await berth.grpc.writeFile({ sessionId: s, path: "tmp.txt", content: utf8("x\n") });
    await berth.grpc.deleteFile({ sessionId: s, path: "tmp.txt", expectedHash: await hashOf(s, "tmp.txt") });
    expect((await berth.grpc.listFiles({ sessionId: s })).entries.some((e) => e.path === "tmp.txt")).toBe(false);
  });
});

describe("DiffChangeset", () => {
  it("combines every session of the changeset and reports a path two sessions leave different", async () => {
    const a = await session();
    const b = await session(a.changesetId);
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "a.txt", content: utf8("from a\n") });
    await berth.grpc.writeFile({ sessionId: b.sessionId, path: "b.txt", content: utf8("from b\n") });
    // Different functions of one file (claims let both write it), so the two versions differ.
    await berth.grpc.writeFile({ sessionId: a.sessionId, path: "src/util.ts", content: utf8(tsModule({ gamma: 41 })) });
    await berth.grpc.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ delta: 42 })) });
    const d = await berth.grpc.diffChangeset({ changesetId: a.changesetId });
    expect(d.sessionIds).toEqual([a.sessionId, b.sessionId]);
    expect(d.paths.map((p) => p.path)).toEqual(["a.txt", "b.txt", "src/util.ts"]);
    expect(d.conflicts).toEqual([expect.objectContaining({ path: "src/util.ts", sessionIds: [a.sessionId, b.sessionId], reason: "DIFFERENT_CONTENT" })]);
    const patch = text(d.patch);
    expect(patch).toContain("+  return 41;");
    expect(patch).not.toContain("+  return 42;");
    expect(d.paths.find((p) => p.path === "src/util.ts")?.symbols.sort()).toEqual(["delta", "gamma"]);
    const dir = checkout(d.baseCommit);
    execFileSync("git", ["-C", dir, "apply", "-"], { input: d.patch });
    expect(readFileSync(path.join(dir, "b.txt"), "utf8")).toBe("from b\n");

    expect(await failure(berth.grpc.diffChangeset({ changesetId: "00000000-0000-4000-8000-000000000000" }))).toMatchObject({ code: "NOT_FOUND", reason: "CHANGESET_NOT_FOUND" });
  });
});
