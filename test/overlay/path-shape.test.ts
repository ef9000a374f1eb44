/**
 * A path is a file or a directory, never both (issue 26, item 6), through the real server on a
 * real git repository: a write of `lib` while the workspace's view has files under `lib/`
 * (PATH_IS_DIRECTORY), and of `lib/x` while it has a file `lib` (PATH_UNDER_FILE), is refused,
 * whether the other path is the base's or the overlay's, and nothing changes. Once the agent
 * deleted what was in the way the write is taken, and the merged view (ListFiles) is exactly the
 * tree CommitChangeset writes. Two instances writing a file and a file below it at once: one is
 * taken, the other refused.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient, type Client as ConnectClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure, rpcFailure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { eventKinds, overlayRows, utf8 } from "./helpers.js";

const BASE: Record<string, string> = {
  "lib/a.ts": "export const a = 1;\n",
  "lib/deep/b.ts": "export const b = 2;\n",
  "notes": "a file, not a directory\n",
  "README.md": "# shapes\n",
};
type Client = ConnectClient<typeof WorkspaceService>;
const sha = (b: string | Uint8Array) => createHash("sha256").update(b).digest("hex");

function baseRepo(): { dir: string; git: (...args: string[]) => string } {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-shape-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  for (const [p, content] of Object.entries(BASE)) {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), content);
  }
  git("add", "-A");
  git("commit", "-q", "-m", "base");
  return { dir, git };
}

describe("a path is a file or a directory, never both", () => {
  let berth: TestBerth;
  let repo: ReturnType<typeof baseRepo>;
  let agents = 0;

  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  /** A session on a repository of its own (whole-file claims of one test do not meet another's). */
  async function session() {
    repo = baseRepo();
    const repoId = (await berth.grpc.registerRepository({ name: `shapes-${agents}`, sourcePath: repo.dir })).repository!.id;
    return (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, agentId: `shaper-${++agents}`, baseCommit: "main" })).workspace!;
  }

  /** The refusal, and that the overlay rows and the events are as they were. */
  async function refused(ws: { sessionId: string; workspaceId: string }, p: string, reason: string, conflicting: string) {
    const db = berth.database.opened.db;
    const rows = await overlayRows(db, ws.workspaceId);
    const events = await eventKinds(db, ws.workspaceId);
    const f = await failure(berth.grpc.writeFile({ sessionId: ws.sessionId, path: p, content: utf8("x\n") }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason });
    expect(f.metadata).toMatchObject({ field: "path", path: p, conflicting_path: conflicting });
    expect(await overlayRows(db, ws.workspaceId)).toEqual(rows);
    expect(await eventKinds(db, ws.workspaceId)).toEqual(events);
  }

  it("a write of a file where the base has a directory is refused PATH_IS_DIRECTORY naming a file below it, and nothing changes", async () => {
    const ws = await session();
    await refused(ws, "lib", "PATH_IS_DIRECTORY", "lib/a.ts");
    await refused(ws, "lib/deep", "PATH_IS_DIRECTORY", "lib/deep/b.ts");
    // Deleting one of two files below is not enough: the other is still there.
    await berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "lib/a.ts" });
    await refused(ws, "lib", "PATH_IS_DIRECTORY", "lib/deep/b.ts");
  });

  it("a write below a file of the base is refused PATH_UNDER_FILE naming the file, at any depth, and nothing changes", async () => {
    const ws = await session();
    await refused(ws, "notes/today.md", "PATH_UNDER_FILE", "notes");
    await refused(ws, "notes/2024/today.md", "PATH_UNDER_FILE", "notes");
    await refused(ws, "README.md/x", "PATH_UNDER_FILE", "README.md");
  });

  it("the overlay's own files and directories refuse each other the same way", async () => {
    const ws = await session();
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "gen", content: utf8("generated\n") });
    await refused(ws, "gen/b.ts", "PATH_UNDER_FILE", "gen");
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "out/sub/b.ts", content: utf8("b\n") });
    await refused(ws, "out", "PATH_IS_DIRECTORY", "out/sub/b.ts");
    await refused(ws, "out/sub", "PATH_IS_DIRECTORY", "out/sub/b.ts");
    // A base directory's file rewritten in the overlay still makes it a directory.
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "lib/a.ts", content: utf8("export const a = 2;\n") });
    await berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "lib/deep/b.ts" });
    await refused(ws, "lib", "PATH_IS_DIRECTORY", "lib/a.ts");
    // A base file written again after its deletion is a file again.
    await berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "notes" });
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "notes", content: utf8("back\n") });
    await refused(ws, "notes/x.md", "PATH_UNDER_FILE", "notes");
  });

  it("once what was in the way is deleted the write is taken, and ListFiles is exactly the tree CommitChangeset writes", async () => {
    const ws = await session();
    const s = ws.sessionId;
    // A directory of the base replaced by a file, a file of the base by a directory, and the same within the overlay.
    await berth.grpc.deleteFile({ sessionId: s, path: "lib/a.ts" });
    await berth.grpc.deleteFile({ sessionId: s, path: "lib/deep/b.ts" });
    await berth.grpc.writeFile({ sessionId: s, path: "lib", content: utf8("lib is a file now\n") });
    await berth.grpc.deleteFile({ sessionId: s, path: "notes" });
    await berth.grpc.writeFile({ sessionId: s, path: "notes/today.md", content: utf8("notes is a directory now\n") });
    await berth.grpc.writeFile({ sessionId: s, path: "gen", content: utf8("generated\n") });
    await berth.grpc.deleteFile({ sessionId: s, path: "gen" });
    await berth.grpc.writeFile({ sessionId: s, path: "gen/b.ts", content: utf8("b\n") });
    await refused(ws, "lib/c.ts", "PATH_UNDER_FILE", "lib");
    await refused(ws, "notes", "PATH_IS_DIRECTORY", "notes/today.md");

    const listed = (await berth.grpc.listFiles({ sessionId: s })).entries.filter((e) => !e.deleted).map((e) => e.path);
    const hashes = new Map<string, string>();
    for (const p of listed) hashes.set(p, (await berth.grpc.readFile({ sessionId: s, path: p })).hash);
    expect(listed).toEqual(["README.md", "gen/b.ts", "lib", "notes/today.md"]);

    const r = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "shapes" });
    const tree = new Map<string, string>();
    for (const line of repo.git("ls-tree", "-r", "--full-tree", r.commitId).split("\n")) {
      const [meta, p] = line.split("\t") as [string, string];
      tree.set(p, sha(execFileSync("git", ["-C", repo.dir, "cat-file", "blob", meta.split(" ")[2]!])));
    }
    expect(tree).toEqual(hashes);
  });
});

needs({ postgres: true })("a path is a file or a directory across instances", () => {
  let berth: TestBerth;

  beforeAll(async () => {
    berth = await startBerth({ instances: 2 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("of a file and a file below it written at once on two instances, exactly one is taken and the other refused", async () => {
    const repo = baseRepo();
    const repoId = (await berth.grpc.registerRepository({ name: "shapes-two", sourcePath: repo.dir })).repository!.id;
    const ws = (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, agentId: "racer", baseCommit: "main" })).workspace!;
    const [a, b] = berth.servers.map((s) => createClient(WorkspaceService, createConnectTransport({ baseUrl: s.httpUrl, httpVersion: "1.1" }))) as [Client, Client];
    // Both instances' caches loaded first.
    for (const c of [a, b]) await c.listFiles({ sessionId: ws.sessionId });
    for (let k = 0; k < 6; k++) {
      const [file, below] = await Promise.allSettled([
        (k % 2 ? a : b).writeFile({ sessionId: ws.sessionId, path: `r${k}`, content: utf8("file\n") }),
        (k % 2 ? b : a).writeFile({ sessionId: ws.sessionId, path: `r${k}/x.ts`, content: utf8("below\n") }),
      ]);
      expect([file.status, below.status].filter((s) => s === "fulfilled")).toHaveLength(1);
      const refusal = rpcFailure(file.status === "rejected" ? file.reason : (below as PromiseRejectedResult).reason);
      expect(refusal).toMatchObject({ code: "FAILED_PRECONDITION", reason: file.status === "rejected" ? "PATH_IS_DIRECTORY" : "PATH_UNDER_FILE" });
    }
    const listed = (await berth.grpc.listFiles({ sessionId: ws.sessionId, prefix: "r" })).entries.map((e) => e.path);
    for (let k = 0; k < 6; k++) expect(listed.filter((p) => p === `r${k}` || p.startsWith(`r${k}/`))).toHaveLength(1);
  });
});
