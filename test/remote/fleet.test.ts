/**
 * Issue 28, a fleet on a git server: two Berth instances with data and environment directories
 * of their own and no source path, one repository served by a real `git daemon` on 127.0.0.1.
 * Each call names the instance it goes to (clients pinned to one instance each), so that "written
 * through B, committed through A" is what happens, and the server is where the instances meet.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ChangesetState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { BASE_FILES, bytes, sha } from "../landing/helpers.js";
import { bareRemote, cloneOf, git, startGitDaemon, type GitDaemon, type Remote } from "./helpers.js";

type Workspaces = Client<typeof WorkspaceService>;

needs({ postgres: true })("a fleet of two instances on a git server (git daemon)", () => {
  let berth: TestBerth;
  let daemon: GitDaemon;
  /** The remote of the current test's seam (TARGET_MOVED), and what it pushes there. */
  let seam: (() => void) | undefined;
  let a: Workspaces;
  let b: Workspaces;
  let turnsB: Client<typeof TurnService>;
  const base = bareRemote("seed").base;

  beforeAll(async () => {
    daemon = await startGitDaemon(base);
    berth = await startBerth({
      kind: "postgres",
      instances: 2,
      beforeTargetUpdate: async () => {
        const push = seam;
        seam = undefined;
        push?.();
      },
    });
    const pinned = <S extends typeof WorkspaceService | typeof TurnService>(service: S, i: number) =>
      createClient(service, createConnectTransport({ baseUrl: berth.servers[i]!.httpUrl, httpVersion: "1.1" }));
    a = pinned(WorkspaceService, 0);
    b = pinned(WorkspaceService, 1);
    turnsB = pinned(TurnService, 1);
  }, 60_000);
  afterAll(async () => {
    await berth?.close();
    await daemon?.stop();
  });

  /** A fresh repository on the daemon, registered (through A) with its git:// URL. */
  async function registered(name: string): Promise<{ remote: Remote; repoId: string }> {
    const remote = bareRemote(name, base);
    const repoId = (await a.registerRepository({ name, remoteUrl: daemon.url(name) })).repository!.id;
    return { remote, repoId };
  }

  const open = async (client: Workspaces, repoId: string, intent: string, baseCommit = "main") =>
    (await client.createWorkspace({ repoId, agentId: "agent-a", baseCommit, intent, mode: WorkspaceMode.PERSISTENT })).workspace!;

  const approve = async (client: Workspaces, changesetId: string) => {
    for (const to of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED]) await client.transitionChangeset({ changesetId, toState: to });
  };

  /** Each instance's mirrors: what is on its disk under its own data directory. */
  const dataDirOf = (i: number) => berth.servers[i]!.dataDir;
  const mirrorsOf = (i: number) => {
    const dir = path.join(dataDirOf(i), "mirrors");
    return existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith(".")) : [];
  };

  for (const transport of ["git://", "file://"] as const) {
    needs({ postgres: true }).it(
      `a workspace created through A, written through B, committed through A and merged through B lands on the server's main, which a clone shows (${transport})`,
      async () => {
        const name = transport === "git://" ? "fleet" : "fleet-file";
        const remote = bareRemote(name, base);
        const url = transport === "git://" ? daemon.url(name) : remote.fileUrl;
        const repoId = (await a.registerRepository({ name, remoteUrl: url })).repository!.id;
        const ws = await open(a, repoId, "Land through the fleet");
        expect(ws.baseCommit).toBe(remote.base0);
        // B has no mirror yet: reading the base and writing make it, from the server.
        expect((await b.readFile({ sessionId: ws.sessionId, path: "notes.txt" })).content).toEqual(bytes(BASE_FILES["notes.txt"]!));
        await b.writeFile({ sessionId: ws.sessionId, path: "src/app.ts", content: bytes("export const answer = 42;\n"), expectedHash: sha(BASE_FILES["src/app.ts"]!) });
        const committed = await a.commitChangeset({ changesetId: ws.changesetId, message: "The answer" });
        expect(remote.git("rev-parse", `refs/heads/berth/${ws.changesetId}`)).toBe(committed.commitId);
        await approve(b, ws.changesetId);
        const merged = await b.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
        expect(merged.merge).toMatchObject({ targetRef: "refs/heads/main", oldCommitId: remote.base0, changesetCommitId: committed.commitId, fastForward: true });
        expect(remote.git("rev-parse", "main")).toBe(merged.merge!.newCommitId);
        // Anyone's clone of the server shows the work.
        const clone = cloneOf(url);
        expect(git(clone, "log", "-1", "--format=%s", "main")).toBe("The answer");
        expect(git(clone, "show", "main:src/app.ts")).toBe("export const answer = 42;");
        // Both instances made mirrors of their own, and share nothing on disk.
        expect(dataDirOf(0)).not.toBe(dataDirOf(1));
        expect(mirrorsOf(0)).toContain(`${repoId}.git`);
        expect(mirrorsOf(1)).toContain(`${repoId}.git`);
      },
      120_000,
    );
  }

  needs({ postgres: true }).it("a push to the server's main between approve and merge: the merge is three-way onto the new tip", async () => {
    const { remote, repoId } = await registered("moved");
    const ws = await open(a, repoId, "Work while main moves");
    await a.writeFile({ sessionId: ws.sessionId, path: "src/app.ts", content: bytes("export const answer = 42;\n"), expectedHash: sha(BASE_FILES["src/app.ts"]!) });
    await approve(a, ws.changesetId);
    const moved = remote.push("main", { "README.md": "# moved on the server\n" }, "someone else's work");
    const merged = await b.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(merged.merge).toMatchObject({ oldCommitId: moved, fastForward: false });
    const main = remote.git("rev-parse", "main");
    expect(main).toBe(merged.merge!.newCommitId);
    expect(remote.git("rev-list", "--parents", "-n1", "main").split(" ").slice(1)).toEqual([moved, merged.merge!.changesetCommitId]);
    const files = remote.files(main);
    expect(files.get("README.md")).toBe("# moved on the server\n");
    expect(files.get("src/app.ts")).toBe("export const answer = 42;\n");
  }, 120_000);

  needs({ postgres: true }).it("a push landing during Berth's own is TARGET_MOVED with both commits, nothing changed, and the retry merges onto it", async () => {
    const { remote, repoId } = await registered("race");
    const ws = await open(a, repoId, "Race the push");
    await a.writeFile({ sessionId: ws.sessionId, path: "notes.txt", content: bytes("line one\nline two\nline three\nline four\n"), expectedHash: sha(BASE_FILES["notes.txt"]!) });
    await approve(a, ws.changesetId);
    let theirs = "";
    seam = () => (theirs = remote.push("main", { "README.md": "# pushed meanwhile\n" }, "pushed during Berth's push"));
    const f = await failure(b.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "TARGET_MOVED" });
    expect(f.metadata).toMatchObject({ target_ref: "refs/heads/main", expected_commit: remote.base0, actual_commit: theirs });
    // Nothing changed: the server's main is the other push, the changeset APPROVED with no commit recorded, no branch pushed.
    expect(remote.git("rev-parse", "main")).toBe(theirs);
    expect(() => remote.git("rev-parse", "--verify", "--quiet", `refs/heads/berth/${ws.changesetId}`)).toThrow();
    const got = await a.getWorkspace({ sessionId: ws.sessionId });
    expect(got.workspace!.changesetState).toBe(ChangesetState.APPROVED);
    const rows = await berth.database.opened.db.selectFrom("changesets").select(["state", "commit_id"]).where("id", "=", ws.changesetId).executeTakeFirstOrThrow();
    expect(rows).toEqual({ state: "approved", commit_id: null });
    // The retry merges onto the new tip.
    const merged = await b.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(merged.merge).toMatchObject({ oldCommitId: theirs, fastForward: false });
    expect(remote.git("rev-parse", "main")).toBe(merged.merge!.newCommitId);
    expect(remote.files("main").get("README.md")).toBe("# pushed meanwhile\n");
    expect(remote.files("main").get("notes.txt")).toBe("line one\nline two\nline three\nline four\n");
  }, 120_000);

  needs({ postgres: true }).it("two instances merging into one target race only through the server's lease: each lands, none is lost", async () => {
    const { remote, repoId } = await registered("two-merges");
    const one = await open(a, repoId, "One");
    const two = await open(b, repoId, "Two");
    await a.writeFile({ sessionId: one.sessionId, path: "one.txt", content: bytes("one\n"), expectedHash: "" });
    await b.writeFile({ sessionId: two.sessionId, path: "two.txt", content: bytes("two\n"), expectedHash: "" });
    await approve(a, one.changesetId);
    await approve(b, two.changesetId);
    const mergeUntilDone = async (client: Workspaces, changesetId: string) => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await client.transitionChangeset({ changesetId, toState: ChangesetState.MERGED });
        } catch (err) {
          const f = await failure(Promise.reject(err));
          if (f.reason !== "TARGET_MOVED" || attempt > 5) throw err;
        }
      }
    };
    await Promise.all([mergeUntilDone(a, one.changesetId), mergeUntilDone(b, two.changesetId)]);
    const files = remote.files("main");
    expect(files.get("one.txt")).toBe("one\n");
    expect(files.get("two.txt")).toBe("two\n");
  }, 120_000);

  needs({ postgres: true }).it("CreateWorkspace on a branch name takes the server's tip through an instance whose mirror is stale", async () => {
    const { remote, repoId } = await registered("tip");
    expect((await open(a, repoId, "Warm A's mirror")).baseCommit).toBe(remote.base0);
    const tip = remote.push("main", { "README.md": "# newer\n" }, "newer");
    expect((await open(a, repoId, "After the push")).baseCommit).toBe(tip);
    // RebaseWorkspace onto "main" means the server's main too.
    const older = await open(b, repoId, "On the old base", remote.base0);
    const next = remote.push("main", { "notes.txt": "rewritten\n" }, "newest");
    const rebased = await b.rebaseWorkspace({ sessionId: older.sessionId, onto: "main" });
    expect(rebased.workspace!.baseCommit).toBe(next);
  }, 120_000);

  needs({ postgres: true }).it(
    "a base commit the server dropped is BASE_COMMIT_GONE on an instance whose mirror never had it, while one whose mirror has it keeps reading and writing",
    async () => {
      const { remote, repoId } = await registered("rewritten");
      const side = remote.push("side", { "side.txt": "only on side\n" }, "side work");
      const ws = await open(a, repoId, "On the side branch", "side");
      expect(ws.baseCommit).toBe(side);
      // The server rewrites its history: the branch goes, and so does its commit.
      remote.git("update-ref", "-d", "refs/heads/side");
      remote.git("reflog", "expire", "--expire=now", "--all");
      remote.git("gc", "-q", "--prune=now");
      const f = await failure(b.readFile({ sessionId: ws.sessionId, path: "side.txt" }));
      expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "BASE_COMMIT_GONE", metadata: { repo_id: repoId, commit: side } });
      // A's mirror still has it: reads and writes there go on.
      expect((await a.readFile({ sessionId: ws.sessionId, path: "side.txt" })).content).toEqual(bytes("only on side\n"));
      await a.writeFile({ sessionId: ws.sessionId, path: "side.txt", content: bytes("changed\n"), expectedHash: sha("only on side\n") });
    },
    120_000,
  );

  needs({ postgres: true }).it("a turn on an instance whose mirror lacks the base materialises it from the server, and captures into the overlay", async () => {
    const { remote, repoId } = await registered("turn");
    const ws = await open(a, repoId, "A turn on B");
    const begun = await turnsB.beginTurn({ sessionId: ws.sessionId });
    const env = begun.environmentPath;
    expect(env).not.toBe("");
    expect(git(env, "rev-parse", "HEAD")).toBe(remote.base0);
    writeFileSync(path.join(env, "made-in-turn.txt"), "from the turn\n");
    await turnsB.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED });
    expect((await a.readFile({ sessionId: ws.sessionId, path: "made-in-turn.txt" })).content).toEqual(bytes("from the turn\n"));
  }, 120_000);
});
