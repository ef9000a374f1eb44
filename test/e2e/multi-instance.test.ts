/**
 * Two servers on one PostgreSQL database: a change answered by one instance is seen by the
 * other, which holds the session live in its memory.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

needs({ postgres: true })("two instances on one database", () => {
  let database: TestDatabase;
  let a: TestBerth;
  let b: TestBerth;
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    a = await startBerth({ database });
    const second = await database.reopen();
    b = await startBerth({ database: { ...database, opened: second } });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await database?.drop();
  });

  it("a session held live by one instance and stranded through the other answers SESSION_STRANDED on both", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "shared" });
    const { workspace } = await a.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" });
    const sessionId = workspace!.sessionId;
    await b.grpc.strandSession({ sessionId, reason: "moved" });
    const seenByA = await eventually(
      () => failure(a.grpc.heartbeat({ sessionId })).catch(() => undefined),
      (f) => f?.reason === "SESSION_STRANDED",
    );
    expect(seenByA).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED" });
    expect((await a.grpc.getWorkspace({ sessionId })).workspace?.lifecycleState).toBe(LifecycleState.STRANDED);
  });

  it("a changeset moved through one instance shows its new state on the other", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "shared-cs" });
    const { workspace } = await a.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" });
    await b.grpc.transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.SUBMITTED });
    const got = await eventually(
      () => a.grpc.getWorkspace({ sessionId: workspace!.sessionId }),
      (r) => r.workspace?.changesetState === ChangesetState.SUBMITTED,
    );
    expect(got.workspace?.changesetState).toBe(ChangesetState.SUBMITTED);
  });
});
