/**
 * Landing (issue 15): a changeset's overlay written as a commit into the real repository
 * (CommitChangeset) and merged into a branch by the MERGED transition, through the real server
 * with real git repositories made here.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { optional } from "../support/services.js";
import { NatsServer, until } from "../events/helpers.js";
import { connect } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { BASE_FILES, approve, eventsUntil, gitRepo, registered, sha, treeOf, write, type Repo } from "./helpers.js";

const jetStream = optional({ natsServer: true }, "that JetStream gets the landing events");
let nats: NatsServer | undefined;
let berth: TestBerth;
/** The test seam's action between the merge's read of the target and its compare-and-set. */
let meddle: ((sourcePath: string, ref: string) => Promise<void>) | undefined;

beforeAll(async () => {
  if (jetStream.ok) nats = await NatsServer.launch();
  berth = await startBerth({
    env: nats ? { NATS_URL: nats.url } : {},
    beforeTargetUpdate: async (source, ref) => {
      const m = meddle;
      meddle = undefined;
      await m?.(source, ref);
    },
  });
});
afterAll(async () => {
  await berth?.close();
  await nats?.destroy();
});

describe("CommitChangeset", () => {
  it("writes base + overlay byte for byte as one commit on berth/<changeset>, without touching the working tree", async () => {
    const repo = gitRepo();
    const { repoId, open } = await registered(berth.grpc, repo, "land-commit");
    const ws = await open("agent-a", { intent: "Answer the question" });
    await write(berth.grpc, ws.sessionId, "src/app.ts", "export const answer = 42;\n");
    await write(berth.grpc, ws.sessionId, "run.sh", "#!/bin/sh\necho bye\n");
    await write(berth.grpc, ws.sessionId, "docs/new.md", "new file\n", null);
    await berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "src/old.ts", expectedHash: sha(BASE_FILES["src/old.ts"]!) });
    const statusBefore = repo.git("status", "--porcelain");

    const r = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "Land the answer", author: { name: "Ada Lovelace", email: "ada@example.com" } });
    expect(r).toMatchObject({ ref: `refs/heads/berth/${ws.changesetId}`, paths: 4, unchanged: false });
    expect(r.changeset!.commitId).toBe(r.commitId);
    expect(repo.git("rev-parse", `berth/${ws.changesetId}`)).toBe(r.commitId);
    expect(repo.git("rev-parse", `${r.commitId}^`)).toBe(repo.base);
    expect(repo.git("rev-parse", `${r.commitId}^{tree}`)).toBe(r.treeId);
    expect(repo.git("log", "-1", "--format=%an <%ae>|%cn|%B", r.commitId)).toBe("Ada Lovelace <ada@example.com>|Berth|Land the answer");

    const expected = new Map<string, [string, string]>([
      ["README.md", ["100644", BASE_FILES["README.md"]!]],
      ["docs/new.md", ["100644", "new file\n"]],
      ["notes.txt", ["100644", BASE_FILES["notes.txt"]!]],
      ["run.sh", ["100755", "#!/bin/sh\necho bye\n"]],
      ["src/app.ts", ["100644", "export const answer = 42;\n"]],
    ]);
    expect(treeOf(repo, r.commitId)).toEqual(expected);
    // The source repository's checkout and index are as they were: only objects and a ref were added.
    expect(repo.git("status", "--porcelain")).toBe(statusBefore);
    expect(repo.git("rev-parse", "HEAD")).toBe(repo.base);

    // Idempotent: the same overlay gives the same commit, and nothing moves.
    const again = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "Land the answer", author: { name: "Ada Lovelace", email: "ada@example.com" } });
    expect(again).toMatchObject({ commitId: r.commitId, unchanged: true });
    expect(repo.git("reflog", "show", "--format=%H", `refs/heads/berth/${ws.changesetId}`).split("\n")).toEqual([r.commitId]);

    // A changed overlay gives a new commit on the same ref, still on the base.
    await write(berth.grpc, ws.sessionId, "src/app.ts", "export const answer = 43;\n", "export const answer = 42;\n");
    const changed = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "Land the answer", author: { name: "Ada Lovelace", email: "ada@example.com" } });
    expect(changed.commitId).not.toBe(r.commitId);
    expect(repo.git("rev-parse", `${changed.commitId}^`)).toBe(repo.base);
    expect(repo.git("show", `${changed.commitId}:src/app.ts`)).toBe("export const answer = 43;");

    const events = await eventsUntil(berth.grpc, repoId, ["changeset.committed"], 2);
    expect(events.map((e) => e.payload.case === "changesetCommitted" && [e.payload.value.commitId, e.payload.value.ref, e.payload.value.paths, e.payload.value.baseCommit])).toEqual([
      [r.commitId, r.ref, 4, repo.base],
      [changed.commitId, r.ref, 4, repo.base],
    ]);
    expect(events[0]!.changesetId).toBe(ws.changesetId);
  });

  it("names the calling agent as author and the sessions' intent as message by default", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "land-defaults");
    const ws = await open("agent-b", { intent: "Fix the notes" });
    await write(berth.grpc, ws.sessionId, "notes.txt", "line one\nline 2\nline three\n");
    const r = await berth.grpc.commitChangeset({ changesetId: ws.changesetId });
    expect(repo.git("log", "-1", "--format=%an <%ae>|%B", r.commitId)).toBe("berth <berth@berth.invalid>|Fix the notes");
  });

  it("combines the overlays of a changeset's sessions, and reports each path they disagree on", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "land-two-sessions");
    const first = await open("agent-a");
    const second = await open("agent-a", { changesetId: first.changesetId });
    await write(berth.grpc, first.sessionId, "src/app.ts", "export const answer = 42;\n");
    await write(berth.grpc, second.sessionId, "docs/second.md", "from the second session\n", null);
    const r = await berth.grpc.commitChangeset({ changesetId: first.changesetId, message: "Both" });
    const tree = treeOf(repo, r.commitId);
    expect(tree.get("src/app.ts")![1]).toBe("export const answer = 42;\n");
    expect(tree.get("docs/second.md")![1]).toBe("from the second session\n");
    expect(r.paths).toBe(2);

    // Now both hold a version of two paths, differently (the claims let go in between, as a
    // finished session would): each path is named; nothing is written.
    await write(berth.grpc, second.sessionId, "notes.txt", "second's notes\n");
    await write(berth.grpc, second.sessionId, "src/new.ts", "export const b = 2;\n", null);
    await berth.grpc.releaseSymbols({ sessionId: second.sessionId });
    await write(berth.grpc, first.sessionId, "notes.txt", "first's notes\n");
    await write(berth.grpc, first.sessionId, "src/new.ts", "export const a = 1;\n", null);
    const refused = await failure(berth.grpc.commitChangeset({ changesetId: first.changesetId, message: "Both" }));
    expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", reason: "OVERLAY_CONFLICT" });
    expect(JSON.parse(refused.metadata.paths!)).toEqual(["notes.txt", "src/new.ts"]);
    expect(JSON.parse(refused.metadata.sessions!)).toEqual({
      "notes.txt": expect.arrayContaining([first.sessionId, second.sessionId]),
      "src/new.ts": expect.arrayContaining([first.sessionId, second.sessionId]),
    });
    expect(repo.git("rev-parse", `berth/${first.changesetId}`)).toBe(r.commitId);
  });

  it("refuses sessions on different base commits (BASE_MISMATCH) and a repository without a source (NO_SOURCE_REPOSITORY)", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "land-bases");
    const first = await open("agent-a");
    const moved = repo.commitOn("main", { "later.txt": "later\n" }, "later");
    const second = await open("agent-a", { changesetId: first.changesetId, baseCommit: moved });
    await write(berth.grpc, first.sessionId, "src/app.ts", "export const answer = 42;\n");
    await write(berth.grpc, second.sessionId, "README.md", "# other\n");
    const mismatch = await failure(berth.grpc.commitChangeset({ changesetId: first.changesetId }));
    expect(mismatch).toMatchObject({ code: "FAILED_PRECONDITION", reason: "BASE_MISMATCH" });
    expect(JSON.parse(mismatch.metadata.bases!)).toEqual({ [first.sessionId]: repo.base, [second.sessionId]: moved });

    const plain = (await berth.grpc.registerRepository({ name: "land-no-source" })).repository!;
    const ws = (await berth.grpc.createWorkspace({ repoId: plain.id, agentId: "agent-a", baseCommit: "deadbeef", mode: WorkspaceMode.PERSISTENT })).workspace!;
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "a.txt", content: new TextEncoder().encode("a\n"), expectedHash: "" });
    expect(await failure(berth.grpc.commitChangeset({ changesetId: ws.changesetId }))).toMatchObject({ code: "FAILED_PRECONDITION", reason: "NO_SOURCE_REPOSITORY" });
    // MERGED stays a state change there, with nothing to merge into; naming a target is refused.
    await approve(berth.grpc, ws.changesetId);
    expect(await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "main" }))).toMatchObject({ reason: "NO_SOURCE_REPOSITORY" });
    const labelled = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(labelled.changeset!.state).toBe(ChangesetState.MERGED);
    expect(labelled.merge).toBeUndefined();
    const empty = await open("agent-a");
    expect(await failure(berth.grpc.commitChangeset({ changesetId: empty.changesetId }))).toMatchObject({ code: "FAILED_PRECONDITION", reason: "NOTHING_TO_COMMIT" });
    expect((await failure(berth.grpc.commitChangeset({ changesetId: "nope" }))).fields).toEqual(["changeset_id"]);
    expect((await failure(berth.grpc.commitChangeset({ changesetId: empty.changesetId, author: { name: "Eve <x>", email: "" } }))).fields).toEqual(["author.name"]);
  });

  it("refuses an author name git would cut to nothing (INVALID_ARGUMENT author.name) and writes nothing", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "land-crud-name");
    const ws = await open("agent-a");
    await write(berth.grpc, ws.sessionId, "src/app.ts", "export const answer = 42;\n");
    const refused = await failure(berth.grpc.commitChangeset({ changesetId: ws.changesetId, author: { name: ` '.'; `, email: "x@example.com" } }));
    expect(refused).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["author.name"] });
    expect(repo.git("for-each-ref", "--format=%(refname)", "refs/heads/berth/")).toBe("");
    // Crud around a name is cut as git cuts it; the commit goes through.
    const r = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, author: { name: ` "Ada, Lovelace". `, email: "ada@example.com" } });
    expect(repo.git("log", "-1", "--format=%an <%ae>", r.commitId)).toBe("Ada, Lovelace <ada@example.com>");
  });
});

describe("the MERGED transition", () => {
  async function approvedChange(repo: Repo, name: string, files: Record<string, [string, string | null]>) {
    const { repoId, open } = await registered(berth.grpc, repo, name);
    const ws = await open("agent-a", { intent: `Change for ${name}` });
    for (const [p, [content, over]] of Object.entries(files)) await write(berth.grpc, ws.sessionId, p, content, over);
    await approve(berth.grpc, ws.changesetId);
    return { repoId, ws };
  }

  it("fast-forwards the default branch (HEAD's) to the changeset's commit, committing it first", async () => {
    const repo = gitRepo();
    const { repoId, ws } = await approvedChange(repo, "land-ff", { "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!] });
    const r = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, reason: "ship it" });
    expect(r.changeset!.state).toBe(ChangesetState.MERGED);
    const branch = repo.git("rev-parse", `berth/${ws.changesetId}`);
    expect(r.merge).toMatchObject({ targetRef: "refs/heads/main", oldCommitId: repo.base, newCommitId: branch, changesetCommitId: branch, fastForward: true });
    expect(repo.git("rev-parse", "main")).toBe(branch);
    expect(repo.git("log", "--format=%s", "main")).toBe(`Change for land-ff\nbase`);

    const [merged] = await eventsUntil(berth.grpc, repoId, ["changeset.merged"], 1);
    expect(merged!.payload).toMatchObject({ case: "changesetMerged", value: { targetRef: "refs/heads/main", oldCommitId: repo.base, newCommitId: branch, fastForward: true } });
    const kinds = (await eventsUntil(berth.grpc, repoId, ["changeset.*"], 6)).map((e) => e.kind);
    expect(kinds).toEqual(["changeset.transitioned", "changeset.transitioned", "changeset.transitioned", "changeset.committed", "changeset.merged", "changeset.transitioned"]);

    if (nats) {
      await until(async () => (berth.server.relay?.publishedSeq ?? 0n) >= merged!.seq, 15_000, "relay");
      const nc = await connect({ servers: nats.url });
      try {
        const jsm = await jetstreamManager(nc);
        await jsm.consumers.add("BERTH_EVENTS", { durable_name: "landing", ack_policy: AckPolicy.Explicit, filter_subject: `berth.*.*.${repoId}` });
        const c = await jetstream(nc).consumers.get("BERTH_EVENTS", "landing");
        const ids: string[] = [];
        for (;;) {
          const m = await c.next({ expires: 2000 });
          if (!m) break;
          ids.push(m.headers!.get("Nats-Msg-Id"));
          m.ack();
        }
        expect(ids).toContain(merged!.id);
      } finally {
        await nc.close();
      }
    }
  });

  it("makes a three-way merge commit when the target moved by an unrelated commit", async () => {
    const repo = gitRepo();
    const { ws } = await approvedChange(repo, "land-3way", { "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!] });
    const moved = repo.commitOn("main", { "README.md": "# demo, moved on\n" }, "unrelated");
    const r = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "main" });
    const branch = repo.git("rev-parse", `berth/${ws.changesetId}`);
    expect(r.merge).toMatchObject({ targetRef: "refs/heads/main", oldCommitId: moved, changesetCommitId: branch, fastForward: false });
    expect(repo.git("rev-parse", "main")).toBe(r.merge!.newCommitId);
    expect(repo.git("log", "-1", "--format=%P", "main")).toBe(`${moved} ${branch}`);
    const tree = treeOf(repo, "main");
    expect(tree.get("README.md")![1]).toBe("# demo, moved on\n");
    expect(tree.get("src/app.ts")![1]).toBe("export const answer = 42;\n");
  });

  it("refuses a conflicting merge with the paths: target unchanged, changeset still APPROVED", async () => {
    const repo = gitRepo();
    const { ws } = await approvedChange(repo, "land-conflict", {
      "notes.txt": ["line one\nline TWO (berth)\nline three\n", BASE_FILES["notes.txt"]!],
      "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!],
    });
    const moved = repo.commitOn("main", { "notes.txt": "line one\nline 2 (human)\nline three\n", "src/app.ts": "export const answer = 40;\n" }, "human edit");
    const refused = await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }));
    expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", reason: "MERGE_CONFLICT", metadata: { target_ref: "refs/heads/main", target_commit: moved } });
    expect(JSON.parse(refused.metadata.paths!)).toEqual(["notes.txt", "src/app.ts"]);
    expect(repo.git("rev-parse", "main")).toBe(moved);
    expect((await berth.grpc.getWorkspace({ sessionId: ws.sessionId })).workspace!.changesetState).toBe(ChangesetState.APPROVED);
  });

  it("refuses TARGET_MOVED when the target moves between the read and the compare-and-set; a retry merges", async () => {
    const repo = gitRepo();
    const { ws } = await approvedChange(repo, "land-moved", { "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!] });
    let sneaked = "";
    meddle = async (source, ref) => {
      expect(source).toBe(repo.dir);
      sneaked = repo.commitOn("main", { "late.txt": "someone else\n" }, "someone else");
      expect(ref).toBe("refs/heads/main");
    };
    const refused = await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }));
    expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", reason: "TARGET_MOVED", metadata: { target_ref: "refs/heads/main", expected_commit: repo.base, actual_commit: sneaked } });
    expect(repo.git("rev-parse", "main")).toBe(sneaked);
    expect((await berth.grpc.getWorkspace({ sessionId: ws.sessionId })).workspace!.changesetState).toBe(ChangesetState.APPROVED);

    const retried = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(retried.merge).toMatchObject({ oldCommitId: sneaked, fastForward: false });
    expect(retried.changeset!.state).toBe(ChangesetState.MERGED);
  });

  it("finishes a merge whose ref update landed before the transition did (crash between them)", async () => {
    const repo = gitRepo();
    const { ws } = await approvedChange(repo, "land-crash", { "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!] });
    const c = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "Change for land-crash" });
    // What a crash after the ref update leaves: main holds the commit, the changeset is APPROVED.
    repo.git("update-ref", "refs/heads/main", c.commitId);
    const r = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(r.merge).toMatchObject({ oldCommitId: c.commitId, newCommitId: c.commitId, changesetCommitId: c.commitId, fastForward: false });
    expect(r.changeset!.state).toBe(ChangesetState.MERGED);
    expect(await failure(berth.grpc.commitChangeset({ changesetId: ws.changesetId }))).toMatchObject({ reason: "CHANGESET_TERMINAL" });
  });

  it("refuses a target that is not a branch, and a target_ref on another transition", async () => {
    const repo = gitRepo();
    const { ws } = await approvedChange(repo, "land-bad-target", { "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!] });
    expect((await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "refs/tags/v1" }))).fields).toEqual(["target_ref"]);
    expect((await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: `berth/${ws.changesetId}` }))).fields).toEqual(["target_ref"]);
    expect(await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "nowhere" }))).toMatchObject({ reason: "TARGET_NOT_FOUND" });
    expect((await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.CLOSED, targetRef: "main" }))).fields).toEqual(["target_ref"]);
    expect(repo.git("rev-parse", "main")).toBe(repo.base);
  });
});
