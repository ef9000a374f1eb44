/**
 * A client that lost the answer of a call that succeeded can retry it and get the success:
 * RegisterRepository with the same `request_id`, TransitionChangeset with `expected_state`
 * (a compare-and-set on the state it leaves). Through the real server, on every instance.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";

let b: TestBerth;
beforeAll(async () => {
  b = await startBerth();
});
afterAll(async () => {
  await b?.close();
});

describe("RegisterRepository request_id", () => {
  it("a retry with the same request_id answers the repository it registered", async () => {
    const name = `retry-${Date.now()}`;
    const first = await b.grpc.registerRepository({ name, requestId: "req-1", captureExclude: ["dist/"] });
    const again = await b.connect.registerRepository({ name, requestId: "req-1", captureExclude: ["dist/"] });
    expect(again.repository!.id).toBe(first.repository!.id);
    expect(again.repository!.captureExclude).toEqual(["dist/"]);
  });

  it("without it, with another request_id, or with other settings, the name is ALREADY_EXISTS", async () => {
    const name = `retry-other-${Date.now()}`;
    await b.grpc.registerRepository({ name, requestId: "req-2" });
    for (const req of [{ name }, { name, requestId: "req-3" }, { name, requestId: "req-2", captureExclude: ["x"] }]) {
      const f = await failure(b.grpc.registerRepository(req));
      expect(f.code).toBe("ALREADY_EXISTS");
      expect(f.reason).toBe("REPOSITORY_EXISTS");
    }
  });

  it("a malformed request_id is INVALID_ARGUMENT naming it", async () => {
    const f = await failure(b.grpc.registerRepository({ name: `bad-req-${Date.now()}`, requestId: "white space" }));
    expect(f.code).toBe("INVALID_ARGUMENT");
    expect(f.fields).toEqual(["request_id"]);
  });
});

describe("CreateWorkspace request_id", () => {
  it("a retry with the same request_id answers the workspace it made, on any instance; concurrent retries make one", async () => {
    const repo = await b.grpc.registerRepository({ name: `create-retry-${Date.now()}` });
    const req = { repoId: repo.repository!.id, baseCommit: "abc123", mode: WorkspaceMode.PERSISTENT, agentId: "retry-agent", intent: "once", requestId: "create-1" };
    const answers = await Promise.all([b.grpc.createWorkspace(req), b.connect.createWorkspace(req), b.grpc.createWorkspace(req), b.grpcWeb.createWorkspace(req)]);
    const ids = new Set(answers.map((a) => a.workspace!.workspaceId));
    expect(ids.size).toBe(1);
    expect(new Set(answers.map((a) => a.workspace!.agentName)).size).toBe(1);
    const sessions = await b.grpc.listSessions({ repoId: repo.repository!.id });
    expect(sessions.sessions).toHaveLength(1);
    // After a strand, the retry still answers that workspace, as it is now.
    await b.grpc.strandSession({ sessionId: answers[0].workspace!.sessionId, reason: "test" });
    const late = await b.grpc.createWorkspace(req);
    expect(late.workspace!.workspaceId).toBe(answers[0].workspace!.workspaceId);
  });

  it("the same request_id with other settings is ALREADY_EXISTS REQUEST_ID_REUSED; another agent's is its own", async () => {
    const repo = await b.grpc.registerRepository({ name: `create-reuse-${Date.now()}` });
    const req = { repoId: repo.repository!.id, baseCommit: "abc123", mode: WorkspaceMode.PERSISTENT, agentId: "reuse-agent", intent: "first", requestId: "create-2" };
    const first = await b.grpc.createWorkspace(req);
    const f = await failure(b.grpc.createWorkspace({ ...req, intent: "second" }));
    expect(f).toMatchObject({ code: "ALREADY_EXISTS", reason: "REQUEST_ID_REUSED" });
    expect(f.metadata.workspace_id).toBe(first.workspace!.workspaceId);
    const other = await b.grpc.createWorkspace({ ...req, agentId: "another-agent" });
    expect(other.workspace!.workspaceId).not.toBe(first.workspace!.workspaceId);
  });
});

describe("TransitionChangeset expected_state", () => {
  async function draftChangeset(): Promise<string> {
    const repo = await b.grpc.registerRepository({ name: `cas-${Date.now()}-${Math.random().toString(36).slice(2)}` });
    const ws = await b.grpc.createWorkspace({ repoId: repo.repository!.id, baseCommit: "abc123", mode: WorkspaceMode.PERSISTENT, agentId: "cas-agent" });
    return ws.workspace!.changesetId;
  }
  async function transitions(changesetId: string): Promise<number> {
    const r = await sql<{ n: string }>`SELECT count(*)::text AS n FROM events WHERE changeset_id = ${changesetId} AND kind = 'changeset.transitioned'`.execute(b.server.database.db);
    return Number(r.rows[0]!.n);
  }

  it("moves from the expected state; a retry after success is answered unchanged, with no second event", async () => {
    const changesetId = await draftChangeset();
    const first = await b.grpc.transitionChangeset({ changesetId, toState: ChangesetState.SUBMITTED, expectedState: ChangesetState.DRAFT });
    expect(first.changeset!.state).toBe(ChangesetState.SUBMITTED);
    expect(first.unchanged).toBe(false);
    const retry = await b.connect.transitionChangeset({ changesetId, toState: ChangesetState.SUBMITTED, expectedState: ChangesetState.DRAFT });
    expect(retry.changeset!.state).toBe(ChangesetState.SUBMITTED);
    expect(retry.unchanged).toBe(true);
    expect(await transitions(changesetId)).toBe(1);
    // Without expected_state the retry is what it always was: not a valid move.
    const plain = await failure(b.grpc.transitionChangeset({ changesetId, toState: ChangesetState.SUBMITTED }));
    expect(plain.reason).toBe("INVALID_TRANSITION");
  });

  it("from another state than expected: FAILED_PRECONDITION STATE_MISMATCH, nothing changed", async () => {
    const changesetId = await draftChangeset();
    const f = await failure(b.grpc.transitionChangeset({ changesetId, toState: ChangesetState.APPROVED, expectedState: ChangesetState.VERIFYING }));
    expect(f.code).toBe("FAILED_PRECONDITION");
    expect(f.reason).toBe("STATE_MISMATCH");
    expect(f.metadata).toMatchObject({ changeset_id: changesetId, expected_state: "VERIFYING", actual_state: "DRAFT" });
    expect(await transitions(changesetId)).toBe(0);
  });

  it("a retried MERGED (no source repository) is answered unchanged", async () => {
    const changesetId = await draftChangeset();
    for (const [to, from] of [[ChangesetState.SUBMITTED, ChangesetState.DRAFT], [ChangesetState.VERIFYING, ChangesetState.SUBMITTED], [ChangesetState.APPROVED, ChangesetState.VERIFYING]] as const) {
      await b.grpc.transitionChangeset({ changesetId, toState: to, expectedState: from });
    }
    const merged = await b.grpc.transitionChangeset({ changesetId, toState: ChangesetState.MERGED, expectedState: ChangesetState.APPROVED });
    expect(merged.unchanged).toBe(false);
    const retry = await b.grpc.transitionChangeset({ changesetId, toState: ChangesetState.MERGED, expectedState: ChangesetState.APPROVED });
    expect(retry.unchanged).toBe(true);
    expect(retry.changeset!.state).toBe(ChangesetState.MERGED);
  });
});
