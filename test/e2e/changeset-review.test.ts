/**
 * Reviewing changesets (issue 29): ListChangesets and GetChangeset through the real server —
 * a repository's changesets by state and in pages, a changeset's history written with every
 * move (who and why), the moves its caller may make (TransitionChangeset's own rule), a
 * changeset sent back to DRAFT whose sessions write again, its branch and merge target, and the
 * same answers from either of two instances.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { ManualClock } from "../../src/platform/clock.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { approve, gitRepo, registered, write } from "../landing/helpers.js";

const { DRAFT, SUBMITTED, VERIFYING, APPROVED, REJECTED, MERGED, CLOSED } = ChangesetState;
const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const text = (s: string) => new TextEncoder().encode(s);

describe("ListChangesets and GetChangeset (auth off)", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  const open = async (repoId: string, agentId: string) =>
    (await berth.grpc.createWorkspace({ repoId, agentId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT })).workspace!;

  it("lists a repository's changesets newest first, by state, in pages that neither repeat nor skip one that moves", async () => {
    const repoId = (await berth.grpc.registerRepository({ name: "review-list" })).repository!.id;
    const other = (await berth.grpc.registerRepository({ name: "review-list-other" })).repository!.id;
    await open(other, "elsewhere");
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await open(repoId, `agent-${i}`)).changesetId);
    // Three wait for review: two SUBMITTED, one APPROVED; one is CLOSED.
    for (const i of [1, 4]) await berth.grpc.transitionChangeset({ changesetId: made[i]!, toState: SUBMITTED });
    await approve(berth.grpc, made[5]!);
    await berth.grpc.transitionChangeset({ changesetId: made[6]!, toState: CLOSED });

    const whole = await berth.grpc.listChangesets({ repoId });
    expect(whole.nextPageToken).toBe("");
    expect(whole.changesets.map((c) => c.id)).toEqual([...made].reverse());
    expect(whole.changesets[1]).toMatchObject({ id: made[5], repoId, state: APPROVED });

    const waiting = await berth.grpc.listChangesets({ repoId, states: [SUBMITTED, VERIFYING, APPROVED] });
    expect(waiting.changesets.map((c) => [c.id, c.state])).toEqual([[made[5], APPROVED], [made[4], SUBMITTED], [made[1], SUBMITTED]]);

    // Pages of 3: a changeset moved between pages keeps its place.
    const first = await berth.grpc.listChangesets({ repoId, pageSize: 3 });
    expect(first.changesets.map((c) => c.id)).toEqual([made[6], made[5], made[4]]);
    expect(first.nextPageToken).not.toBe("");
    await berth.grpc.transitionChangeset({ changesetId: made[3]!, toState: SUBMITTED });
    const second = await berth.grpc.listChangesets({ repoId, pageSize: 3, pageToken: first.nextPageToken });
    expect(second.changesets.map((c) => c.id)).toEqual([made[3], made[2], made[1]]);
    expect(second.changesets[0]!.state).toBe(SUBMITTED);
    const third = await berth.grpc.listChangesets({ repoId, pageSize: 3, pageToken: second.nextPageToken });
    expect(third).toMatchObject({ nextPageToken: "" });
    expect(third.changesets.map((c) => c.id)).toEqual([made[0]]);
  });

  it("refuses a bad state, page size or token naming the field, and an unknown repository", async () => {
    const repoId = (await berth.grpc.registerRepository({ name: "review-bad" })).repository!.id;
    expect(await failure(berth.grpc.listChangesets({ repoId, states: [SUBMITTED, ChangesetState.UNSPECIFIED] }))).toMatchObject({
      code: "INVALID_ARGUMENT",
      fields: ["states[1]"],
      message: expect.stringContaining("CHANGESET_STATE_UNSPECIFIED"),
    });
    expect(await failure(berth.grpc.listChangesets({ repoId, pageSize: 1001 }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["page_size"] });
    const sessionsToken = (await berth.grpc.listSessions({ repoId, pageSize: 1 })).nextPageToken || Buffer.from(JSON.stringify(["sessions", 1, "x"])).toString("base64url");
    expect(await failure(berth.grpc.listChangesets({ repoId, pageToken: sessionsToken }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["page_token"] });
    expect(await failure(berth.grpc.listChangesets({ repoId: "nope" }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["repo_id"] });
    expect(await failure(berth.grpc.listChangesets({ repoId: "00000000-0000-4000-8000-000000000000" }))).toMatchObject({ code: "NOT_FOUND", reason: "REPOSITORY_NOT_FOUND" });
    expect(await failure(berth.grpc.getChangeset({ changesetId: "00000000-0000-4000-8000-000000000000" }))).toMatchObject({ code: "NOT_FOUND", reason: "CHANGESET_NOT_FOUND" });
    expect(await failure(berth.grpc.getChangeset({ changesetId: "" }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["changeset_id"] });
  });

  it("shows a changeset's sessions, its commit's branch and, once merged, the branch it went into", async () => {
    const repo = gitRepo();
    const { open: openIn } = await registered(berth.grpc, repo, "review-land");
    const a = await openIn("agent-a", { intent: "first half" });
    const b = await openIn("agent-b", { intent: "second half", changesetId: a.changesetId });
    await write(berth.grpc, a.sessionId, "src/app.ts", "export const answer = 42;\n");
    await write(berth.grpc, b.sessionId, "docs/b.md", "b\n", null);

    const before = await berth.grpc.getChangeset({ changesetId: a.changesetId });
    expect(before).toMatchObject({ branch: "", mergedInto: "", transitions: [] });
    expect(before.changeset).toMatchObject({ id: a.changesetId, state: DRAFT, commitId: "" });
    expect(before.sessions.map((s) => [s.sessionId, s.agentId, s.intent])).toEqual([[a.sessionId, "agent-a", "first half"], [b.sessionId, "agent-b", "second half"]]);
    expect(before.allowedTransitions).toEqual([SUBMITTED, CLOSED]);

    const committed = await berth.grpc.commitChangeset({ changesetId: a.changesetId, message: "both halves" });
    expect((await berth.grpc.getChangeset({ changesetId: a.changesetId })).branch).toBe(committed.ref);
    await approve(berth.grpc, a.changesetId);
    expect((await berth.grpc.getChangeset({ changesetId: a.changesetId })).allowedTransitions).toEqual([MERGED, DRAFT, CLOSED]);
    await berth.grpc.transitionChangeset({ changesetId: a.changesetId, toState: MERGED, reason: "ship it" });

    const after = await berth.grpc.getChangeset({ changesetId: a.changesetId });
    expect(after).toMatchObject({ branch: `refs/heads/berth/${a.changesetId}`, mergedInto: "refs/heads/main", allowedTransitions: [] });
    expect(after.changeset!.state).toBe(MERGED);
    expect(after.transitions.map((t) => [t.from, t.to, t.reason, t.who])).toEqual([
      [DRAFT, SUBMITTED, "", "anonymous"],
      [SUBMITTED, VERIFYING, "", "anonymous"],
      [VERIFYING, APPROVED, "", "anonymous"],
      [APPROVED, MERGED, "ship it", "anonymous"],
    ]);
    expect(repo.git("log", "--format=%s", "main").split("\n")).toContain("both halves");
  });
});

describe("a changeset's history, moves and readers (token auth)", () => {
  let berth: TestBerth;
  let repoId: string;
  const TOKENS = { alice: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };
  const as = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-review-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.bob), agent_id: "bob", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
    repoId = (await as("alice").registerRepository({ name: "review-auth" })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  const session = async () => (await as("alice").createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT })).workspace!;

  it("records every move with its reason and who made it, oldest first, in the transaction that made it", async () => {
    const ws = await session();
    await as("alice").transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED, reason: "ready for review" });
    await as("ops").transitionChangeset({ changesetId: ws.changesetId, toState: VERIFYING, reason: "checking" });
    await as("ops").transitionChangeset({ changesetId: ws.changesetId, toState: REJECTED, reason: "tests fail" });
    // A refused move leaves no history.
    expect(await failure(as("alice").transitionChangeset({ changesetId: ws.changesetId, toState: DRAFT }))).toMatchObject({ code: "FAILED_PRECONDITION", reason: "CHANGESET_TERMINAL" });

    const got = await as("alice").getChangeset({ changesetId: ws.changesetId });
    expect(got.changeset).toMatchObject({ state: REJECTED, reason: "tests fail" });
    expect(got.transitions.map((t) => [t.from, t.to, t.reason, t.who])).toEqual([
      [DRAFT, SUBMITTED, "ready for review", "alice"],
      [SUBMITTED, VERIFYING, "checking", "ops"],
      [VERIFYING, REJECTED, "tests fail", "ops"],
    ]);
    const at = got.transitions.map((t) => Number(t.at!.seconds) * 1000 + t.at!.nanos / 1e6);
    expect(at).toEqual([...at].sort((x, y) => x - y));
    expect(got.allowedTransitions).toEqual([]);
  });

  it("records the rejection of an abandoned session's changeset as made by whoever abandoned it", async () => {
    const ws = await session();
    await as("alice").transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED });
    await as("alice").abandonSession({ sessionId: ws.sessionId, reason: "wrong approach" });
    const got = await as("alice").getChangeset({ changesetId: ws.changesetId });
    expect(got.transitions.map((t) => [t.from, t.to, t.reason, t.who])).toEqual([
      [DRAFT, SUBMITTED, "", "alice"],
      [SUBMITTED, REJECTED, "session_abandoned:explicit", "alice"],
    ]);
    expect(got.sessions.map((s) => [s.sessionId, s.lifecycleState])).toEqual([[ws.sessionId, LifecycleState.ABANDONED]]);
  });

  it("answers the moves the caller may make: the author's and an admin's by the state machine, nothing to another agent", async () => {
    const ws = await session();
    await as("alice").transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED });
    expect((await as("alice").getChangeset({ changesetId: ws.changesetId })).allowedTransitions).toEqual([VERIFYING, DRAFT, CLOSED]);
    expect((await as("ops").getChangeset({ changesetId: ws.changesetId })).allowedTransitions).toEqual([VERIFYING, DRAFT, CLOSED]);
    // Bob may read neither it nor its diff, and may not move it: the rule TransitionChangeset applies.
    expect(await failure(as("bob").getChangeset({ changesetId: ws.changesetId }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "NOT_CHANGESET_OWNER" });
    expect(await failure(as("bob").diffChangeset({ changesetId: ws.changesetId }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "NOT_CHANGESET_OWNER" });
    expect(await failure(as("bob").transitionChangeset({ changesetId: ws.changesetId, toState: VERIFYING }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "NOT_CHANGESET_OWNER" });
    // Listing the repository's changesets is a repository read, as ListSessions is.
    expect((await as("bob").listChangesets({ repoId, states: [SUBMITTED] })).changesets.map((c) => c.id)).toContain(ws.changesetId);
    // Each allowed move is one the server then accepts.
    for (const to of (await as("alice").getChangeset({ changesetId: ws.changesetId })).allowedTransitions.filter((s) => s !== CLOSED)) {
      const probe = await session();
      await as("alice").transitionChangeset({ changesetId: probe.changesetId, toState: SUBMITTED });
      expect((await as("alice").transitionChangeset({ changesetId: probe.changesetId, toState: to })).changeset!.state).toBe(to);
    }
  });

  it("sends a changeset back for changes: SUBMITTED or APPROVED to DRAFT, its sessions write again, and it is submitted anew", async () => {
    const ws = await session();
    const alice = as("alice");
    await alice.writeFile({ sessionId: ws.sessionId, path: "notes.txt", content: text("v1\n") });
    await alice.transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED, reason: "done" });
    await as("ops").transitionChangeset({ changesetId: ws.changesetId, toState: DRAFT, reason: "add a test" });
    const v2 = await alice.writeFile({ sessionId: ws.sessionId, path: "notes.txt", content: text("v2\n"), expectedHash: sha("v1\n") });
    expect(v2.newHash).toBe(sha("v2\n"));
    for (const to of [SUBMITTED, VERIFYING]) await alice.transitionChangeset({ changesetId: ws.changesetId, toState: to });
    // The repository requires independent review (the default): an admin, not the author, approves.
    await as("ops").transitionChangeset({ changesetId: ws.changesetId, toState: APPROVED });
    await as("ops").transitionChangeset({ changesetId: ws.changesetId, toState: DRAFT, reason: "one more thing" });
    await alice.writeFile({ sessionId: ws.sessionId, path: "notes.txt", content: text("v3\n"), expectedHash: sha("v2\n") });
    expect(new TextDecoder().decode((await alice.readFile({ sessionId: ws.sessionId, path: "notes.txt" })).content)).toBe("v3\n");
    await alice.transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED, reason: "again" });

    const got = await alice.getChangeset({ changesetId: ws.changesetId });
    expect(got.transitions.map((t) => [t.from, t.to, t.who, t.reason])).toEqual([
      [DRAFT, SUBMITTED, "alice", "done"],
      [SUBMITTED, DRAFT, "ops", "add a test"],
      [DRAFT, SUBMITTED, "alice", ""],
      [SUBMITTED, VERIFYING, "alice", ""],
      [VERIFYING, APPROVED, "ops", ""],
      [APPROVED, DRAFT, "ops", "one more thing"],
      [DRAFT, SUBMITTED, "alice", "again"],
    ]);
    // A terminal changeset is not sent back.
    await as("ops").transitionChangeset({ changesetId: ws.changesetId, toState: CLOSED });
    expect(await failure(alice.transitionChangeset({ changesetId: ws.changesetId, toState: DRAFT }))).toMatchObject({ code: "FAILED_PRECONDITION", reason: "CHANGESET_TERMINAL" });
  });
});

describe("a move the server makes on its own", () => {
  let berth: TestBerth;
  const clock = new ManualClock(Date.now());
  beforeAll(async () => {
    berth = await startBerth({ clock, env: { BERTH_STRANDED_TTL_S: "60" } });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("records the stranded sweep's rejection as made by berth, with its reason", async () => {
    const repoId = (await berth.grpc.registerRepository({ name: "review-sweep" })).repository!.id;
    const ws = (await berth.grpc.createWorkspace({ repoId, agentId: "agent-a", baseCommit: "main", mode: WorkspaceMode.PERSISTENT })).workspace!;
    await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED, reason: "done" });
    await berth.grpc.strandSession({ sessionId: ws.sessionId, reason: "gone" });
    clock.advance(61_000);
    await berth.server.lifecycle.tick();
    const got = await berth.grpc.getChangeset({ changesetId: ws.changesetId });
    expect(got.transitions.map((t) => [t.from, t.to, t.reason, t.who])).toEqual([
      [DRAFT, SUBMITTED, "done", "anonymous"],
      [SUBMITTED, REJECTED, "session_abandoned:auto_ttl", "berth"],
    ]);
  });
});

needs({ postgres: true })("changeset review on two instances", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ kind: "postgres", instances: 2 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  needs({ postgres: true }).it("answers the same history and list from either instance, each move recorded once", async () => {
    expect(berth.servers).toHaveLength(2);
    const one = createGrpcClient(WorkspaceService, berth.servers[0]!.grpcAddress);
    const two = createGrpcClient(WorkspaceService, berth.servers[1]!.grpcAddress);
    const repoId = (await one.registerRepository({ name: "review-two" })).repository!.id;
    const ws = (await one.createWorkspace({ repoId, agentId: "agent-a", baseCommit: "main", mode: WorkspaceMode.PERSISTENT })).workspace!;
    await one.transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED, reason: "on one" });
    await two.transitionChangeset({ changesetId: ws.changesetId, toState: DRAFT, reason: "on two" });
    // Racing the same move on both instances: one wins, and the history has it once.
    const raced = await Promise.allSettled([one, two].map((c) => c.transitionChangeset({ changesetId: ws.changesetId, toState: SUBMITTED, expectedState: DRAFT, reason: "raced" })));
    expect(raced.every((r) => r.status === "fulfilled")).toBe(true);
    const fromOne = await one.getChangeset({ changesetId: ws.changesetId });
    const fromTwo = await two.getChangeset({ changesetId: ws.changesetId });
    expect(fromTwo).toEqual(fromOne);
    expect(fromOne.changeset!.state).toBe(SUBMITTED);
    expect(fromOne.transitions.map((t) => [t.from, t.to, t.reason])).toEqual([
      [DRAFT, SUBMITTED, "on one"],
      [SUBMITTED, DRAFT, "on two"],
      [DRAFT, SUBMITTED, "raced"],
    ]);
    expect((await two.listChangesets({ repoId, states: [SUBMITTED] })).changesets.map((c) => c.id)).toEqual([ws.changesetId]);
  });
});
