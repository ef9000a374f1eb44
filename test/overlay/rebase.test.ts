/**
 * RebaseWorkspace (issue 15) through two real servers on one PostgreSQL (every call goes to the
 * next instance), against a real git repository whose main branch moves after the workspace was
 * made: a clean three-way merge, a conflict left with git's markers, modify/delete, the base
 * moved for ReadFile/ListFiles/DiffWorkspace on the other instance, workspace.rebased stored.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FileChange, FileSource, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { clusterAt } from "../support/instances.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "../turns/helpers.js";
import { gitRepo, text, utf8 } from "./helpers.js";

const LINES = Array.from({ length: 30 }, (_, i) => `line ${i}`);
const file = (edit: (l: string[]) => void = () => {}) => {
  const l = [...LINES];
  edit(l);
  return l.join("\n") + "\n";
};

needs({ postgres: true })("RebaseWorkspace", () => {
  let berth: TestBerth;
  let repoId: string;
  let dir: string;
  let oldBase: string;
  let newBase: string;
  let agentSeq = 0;
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
  const commit = (m: string) => {
    git("add", "-A");
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", m);
    return git("rev-parse", "HEAD");
  };

  beforeAll(async () => {
    dir = gitRepo().dir;
    mkdirSync(path.join(dir, "m"), { recursive: true });
    for (const n of ["clean", "conflict", "gone", "same", "untouched", "removed-here"]) writeFileSync(path.join(dir, "m", `${n}.txt`), file());
    oldBase = commit("old base");
    // main moves on: upstream edits.
    writeFileSync(path.join(dir, "m", "clean.txt"), file((l) => (l[25] = "line 25 upstream")));
    writeFileSync(path.join(dir, "m", "conflict.txt"), file((l) => (l[5] = "line 5 upstream")));
    writeFileSync(path.join(dir, "m", "same.txt"), file((l) => (l[1] = "line 1 both")));
    writeFileSync(path.join(dir, "m", "untouched.txt"), file((l) => (l[0] = "line 0 upstream")));
    writeFileSync(path.join(dir, "m", "removed-here.txt"), file((l) => (l[9] = "line 9 upstream")));
    rmSync(path.join(dir, "m", "gone.txt"));
    newBase = commit("upstream");
    git("branch", "upstream");
    git("checkout", "-q", oldBase);
    berth = await startBerth({ instances: 2 });
    repoId = (await berth.grpc.registerRepository({ name: "rebase-demo", sourcePath: dir })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  async function session() {
    const { workspace } = await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: `rebaser-${++agentSeq}`, baseCommit: oldBase });
    return workspace!;
  }

  it("merges clean files, leaves conflicts with git's markers, and moves the base for every instance in one change", async () => {
    const ws = await session();
    const s = ws.sessionId;
    expect(ws.baseCommit).toBe(oldBase);
    const hash = async (p: string) => (await berth.grpc.readFile({ sessionId: s, path: p })).hash;
    await berth.grpc.writeFile({ sessionId: s, path: "m/clean.txt", content: utf8(file((l) => (l[2] = "line 2 mine"))) });
    await berth.grpc.writeFile({ sessionId: s, path: "m/conflict.txt", content: utf8(file((l) => (l[5] = "line 5 mine"))) });
    await berth.grpc.writeFile({ sessionId: s, path: "m/gone.txt", content: utf8(file((l) => (l[3] = "line 3 mine"))) });
    await berth.grpc.writeFile({ sessionId: s, path: "m/same.txt", content: utf8(file((l) => (l[1] = "line 1 both"))) });
    await berth.grpc.writeFile({ sessionId: s, path: "m/added.txt", content: utf8("mine only\n") });
    await berth.grpc.deleteFile({ sessionId: s, path: "m/removed-here.txt", expectedHash: await hash("m/removed-here.txt") });
    // Read once on each instance at the old base, so both have the old base and the overlay cached.
    for (let i = 0; i < 2; i++) expect(text((await berth.grpc.readFile({ sessionId: s, path: "m/untouched.txt" })).content)).toBe(file());

    // The rebase is served by the instance that does not hold the session live: the owner's
    // cached Workspace and overlay must see the move.
    const owner = berth.servers.findIndex((sv) => sv.registry.liveWorkspace(s) !== undefined);
    expect(owner).toBeGreaterThanOrEqual(0);
    const rotation = clusterAt(berth.server.grpcAddress)!;
    while ((rotation.next() + 1) % 2 === owner);
    const r = await berth.grpc.rebaseWorkspace({ sessionId: s, onto: "upstream" });
    expect(berth.servers[owner]!.registry.liveWorkspace(s)?.baseCommit).toBe(oldBase);
    expect(r.oldBaseCommit).toBe(oldBase);
    expect(r.workspace?.baseCommit).toBe(newBase);
    expect(r.merged).toEqual(["m/clean.txt"]);
    expect(r.dropped).toEqual(["m/same.txt"]);
    expect(r.conflicts).toEqual([
      expect.objectContaining({ path: "m/conflict.txt", kind: "CONTENT" }),
      expect.objectContaining({ path: "m/gone.txt", kind: "MODIFY_DELETE" }),
      expect.objectContaining({ path: "m/removed-here.txt", kind: "DELETE_MODIFY" }),
    ]);

    // Both instances (calls alternate) answer from the new base.
    for (let i = 0; i < 2; i++) {
      expect((await berth.grpc.getWorkspace({ sessionId: s })).workspace?.baseCommit).toBe(newBase);
      expect(text((await berth.grpc.readFile({ sessionId: s, path: "m/untouched.txt" })).content)).toBe(file((l) => (l[0] = "line 0 upstream")));
      expect(text((await berth.grpc.readFile({ sessionId: s, path: "m/clean.txt" })).content)).toBe(
        file((l) => {
          l[2] = "line 2 mine";
          l[25] = "line 25 upstream";
        }),
      );
      const c = text((await berth.grpc.readFile({ sessionId: s, path: "m/conflict.txt" })).content);
      expect(c).toContain("<<<<<<< workspace\nline 5 mine\n");
      expect(c).toContain(`||||||| old base ${oldBase.slice(0, 12)}\nline 5\n`);
      expect(c).toContain(`=======\nline 5 upstream\n>>>>>>> new base ${newBase.slice(0, 12)}\n`);
      // same.txt: the new base has the workspace's change; it reads from the base now.
      expect((await berth.grpc.readFile({ sessionId: s, path: "m/same.txt" })).source).toBe(FileSource.BASE);
      // The workspace's version of a file the new base deleted is kept.
      expect(text((await berth.grpc.readFile({ sessionId: s, path: "m/gone.txt" })).content)).toContain("line 3 mine");
      expect(await failure(berth.grpc.readFile({ sessionId: s, path: "m/removed-here.txt" }))).toMatchObject({ code: "NOT_FOUND", reason: "FILE_DELETED" });
      const list = await berth.grpc.listFiles({ sessionId: s, prefix: "m/", includeDeleted: true });
      expect(list.entries.map((e) => [e.path, e.change])).toEqual([
        ["m/added.txt", FileChange.ADDED],
        ["m/clean.txt", FileChange.MODIFIED],
        ["m/conflict.txt", FileChange.MODIFIED],
        ["m/gone.txt", FileChange.ADDED],
        ["m/removed-here.txt", FileChange.DELETED],
        ["m/same.txt", FileChange.UNSPECIFIED],
        ["m/untouched.txt", FileChange.UNSPECIFIED],
      ]);
      const d = await berth.grpc.diffWorkspace({ sessionId: s });
      expect(d.baseCommit).toBe(newBase);
      // git's rename detection pairs the deleted file with the similar one the new base lacks.
      expect(d.paths.map((p) => [p.path, p.oldPath])).toEqual([
        ["m/added.txt", ""],
        ["m/clean.txt", ""],
        ["m/conflict.txt", ""],
        ["m/gone.txt", "m/removed-here.txt"],
      ]);
    }
    const db = berth.database.opened.db;
    const ev = await sql<{ kind: string }>`SELECT kind FROM events WHERE workspace_id = ${ws.workspaceId}::uuid AND kind = 'workspace.rebased'`.execute(db);
    expect(ev.rows).toHaveLength(1);
    const row = await sql<{ base_commit: string }>`SELECT base_commit FROM workspaces WHERE id = ${ws.workspaceId}::uuid`.execute(db);
    expect(row.rows[0]?.base_commit).toBe(newBase);

    // A write after the rebase is checked against the new base (expected_hash of the merged file).
    const merged = await berth.grpc.readFile({ sessionId: s, path: "m/clean.txt" });
    await berth.grpc.writeFile({ sessionId: s, path: "m/clean.txt", content: utf8("replaced\n"), expectedHash: merged.hash });
  });

  it("is a no-op onto the same base, and names a bad onto", async () => {
    const ws = await session();
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "m/x.txt", content: utf8("x\n") });
    const r = await berth.grpc.rebaseWorkspace({ sessionId: ws.sessionId, onto: oldBase });
    expect(r).toMatchObject({ oldBaseCommit: oldBase, merged: [], conflicts: [], dropped: [] });
    expect(r.workspace?.baseCommit).toBe(oldBase);
    const bad = await failure(berth.grpc.rebaseWorkspace({ sessionId: ws.sessionId, onto: "no-such-branch" }));
    expect(bad).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(bad.fields).toEqual(["onto"]);
    expect((await failure(berth.grpc.rebaseWorkspace({ sessionId: ws.sessionId, onto: "" }))).fields).toEqual(["onto"]);
  });
});

describe("RebaseWorkspace and turns", () => {
  let b: TurnBerth;
  let source: string;
  beforeAll(async () => {
    source = makeGitRepo(4);
    b = await startTurnBerth({ instances: 1 });
  });
  afterAll(async () => {
    await b?.close();
  });

  it("refuses while a turn runs (TURN_IN_PROGRESS); after the turn, the parked environment is evicted and the next turn is cold at the new base", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    const f = await failure(b.ws.rebaseWorkspace({ sessionId, onto: "HEAD" }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "TURN_IN_PROGRESS", metadata: { turn_id: t1.turnId } });
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });

    const sgit = (...args: string[]) => execFileSync("git", ["-C", source, ...args], { encoding: "utf8" }).trim();
    writeFileSync(path.join(source, "README.md"), "# moved on\n");
    sgit("commit", "-q", "-am", "upstream");
    const before = await b.turns.getPoolStats({});
    const r = await b.ws.rebaseWorkspace({ sessionId, onto: "main" });
    expect(r.workspace?.baseCommit).toBe(sgit("rev-parse", "HEAD"));
    await vi.waitFor(async () => {
      const s = await b.turns.getPoolStats({});
      expect((s.evictions["rebased"] ?? 0n) - (before.evictions["rebased"] ?? 0n)).toBe(1n);
    });
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(false);
    expect(readFileSync(path.join(t2.environmentPath, "README.md"), "utf8")).toBe("# moved on\n");
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
  });
});
