/**
 * The lifecycle over the wire (gRPC via grpc-js, and a real server process killed with -9):
 * Heartbeat, AttachSession, StrandSession, ResumeSession, AbandonSession and the startup reconcile.
 */
import { sql } from "kysely";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { AbandonCause, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createTestDatabase, PRIMARY_KIND, type TestDatabase } from "../support/database.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient, GrpcCallError } from "../support/grpc-client.js";
import { needs } from "../support/services.js";
import { serve } from "../support/serve-process.js";

async function grpcFailure(p: Promise<unknown>): Promise<GrpcCallError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof GrpcCallError) return err;
    throw err;
  }
  throw new Error("expected the call to fail");
}

describe(`lifecycle over gRPC (${PRIMARY_KIND})`, () => {
  let berth: TestBerth;
  let repoId: string;
  beforeEach(async () => {
    berth = await startBerth({ env: { BERTH_GC_INTERVAL_MS: "3600000" } });
    repoId = (await berth.grpc.registerRepository({ name: "lifecycle" })).repository!.id;
  });
  afterEach(async () => {
    await berth.close();
  });

  const create = async (agentId = "agent-a") =>
    (await berth.grpc.createWorkspace({ repoId, baseCommit: "abc123", mode: WorkspaceMode.EPHEMERAL, agentId })).workspace!;

  it("Heartbeat answers the lease and records activity", async () => {
    const ws = await create();
    const res = await berth.grpc.heartbeat({ sessionId: ws.sessionId });
    expect(res.leaseMs).toBe(30_000);
  });

  it("StrandSession, then every session RPC answers SESSION_STRANDED (not NOT_FOUND); GetWorkspace reads it; ResumeSession brings it back", async () => {
    const ws = await create();
    const stranded = (await berth.grpc.strandSession({ sessionId: ws.sessionId, reason: "laptop closed" })).workspace!;
    expect(stranded.lifecycleState).toBe(LifecycleState.STRANDED);
    expect(stranded.lifecycleReason).toBe("laptop closed");
    for (const call of [
      () => berth.grpc.heartbeat({ sessionId: ws.sessionId }),
      () => berth.grpc.destroyWorkspace({ sessionId: ws.sessionId }),
    ]) {
      const err = await grpcFailure(call());
      expect(err.codeName).toBe("FAILED_PRECONDITION");
      expect(err.errorInfo?.reason).toBe("SESSION_STRANDED");
      expect(err.errorInfo?.metadata).toMatchObject({ changeset_id: ws.changesetId, reason: "laptop closed" });
      expect(err.errorInfo?.metadata.stranded_at).toBeTruthy();
    }
    const attach = await grpcFailure((async () => {
      for await (const first of berth.grpc.attachSession({ sessionId: ws.sessionId })) return first;
    })());
    expect(attach.errorInfo?.reason).toBe("SESSION_STRANDED");
    expect((await berth.grpc.getWorkspace({ sessionId: ws.sessionId })).workspace!.lifecycleState).toBe(LifecycleState.STRANDED);
    // Idempotent.
    await berth.grpc.strandSession({ sessionId: ws.sessionId });

    const resumed = await berth.grpc.resumeSession({ deadSessionId: ws.sessionId, agentId: "agent-a" });
    expect(resumed.workspace!.workspaceId).toBe(ws.workspaceId);
    expect(resumed.workspace!.resumedFromSessionId).toBe(ws.sessionId);
    // Defect 3: the next RPC recognises it.
    await berth.grpc.heartbeat({ sessionId: resumed.newSessionId });
    // Defect 4: a retry gets ALREADY_RESUMED with the winner's id.
    const again = await grpcFailure(berth.grpc.resumeSession({ deadSessionId: ws.sessionId, agentId: "agent-a" }));
    expect(again.codeName).toBe("FAILED_PRECONDITION");
    expect(again.errorInfo?.reason).toBe("ALREADY_RESUMED");
    expect(again.errorInfo?.metadata.new_session_id).toBe(resumed.newSessionId);
    const wrong = await grpcFailure(berth.grpc.resumeSession({ deadSessionId: resumed.newSessionId, agentId: "agent-b" }));
    expect(wrong.codeName).toBe("PERMISSION_DENIED");
  });

  it("AbandonSession rejects the changeset; the session answers SESSION_ABANDONED; idempotent", async () => {
    const ws = await create();
    const out = (await berth.grpc.abandonSession({ sessionId: ws.sessionId, reason: "gave up" })).workspace!;
    expect(out.lifecycleState).toBe(LifecycleState.ABANDONED);
    expect(out.changesetState).toBe(ChangesetState.REJECTED);
    await berth.grpc.abandonSession({ sessionId: ws.sessionId, cause: AbandonCause.ADMIN });
    const err = await grpcFailure(berth.grpc.heartbeat({ sessionId: ws.sessionId }));
    expect([err.codeName, err.errorInfo?.reason]).toEqual(["FAILED_PRECONDITION", "SESSION_ABANDONED"]);
  });

  it("AttachSession sends the workspace, then the session's notices, and ends when it is stranded", async () => {
    const ws = await create();
    const got: string[] = [];
    const stream = (async () => {
      for await (const m of berth.grpc.attachSession({ sessionId: ws.sessionId })) {
        got.push(m.message.case === "workspace" ? "workspace" : `event:${m.message.value?.kind}`);
        if (m.message.case === "workspace") await berth.grpc.strandSession({ sessionId: ws.sessionId });
      }
    })();
    await stream;
    expect(got).toEqual(["workspace", "event:session.stranded"]);
  });

  it("an attached session stays connected past the lease; after the stream closes, GC strands it", async () => {
    const ws = await create();
    const controller = new AbortController();
    const first = new Promise<void>((resolve, reject) => {
      void (async () => {
        try {
          for await (const m of berth.grpc.attachSession({ sessionId: ws.sessionId }, { signal: controller.signal })) {
            if (m.message.case === "workspace") resolve();
          }
        } catch {
          /* cancelled */
        }
      })().catch(reject);
    });
    await first;
    // The instance that owns the session decides; the stream may be held by another (several instances).
    const owner = berth.servers.find((s) => s.registry.liveWorkspace(ws.sessionId) !== undefined)!;
    const lifecycle = owner.lifecycle;
    const live = owner.registry.liveWorkspace(ws.sessionId)!;
    const flushAll = () => Promise.all(berth.servers.map((s) => s.lifecycle.flushActivity()));
    // As if the lease had lapsed long ago: in memory and in the row (the GC reads both, the later wins).
    const lapse = async () => {
      await flushAll();
      live.lastActiveAt -= 60_000;
      await sql`UPDATE workspaces SET last_active_at = ${new Date(live.lastActiveAt)} WHERE id = ${ws.workspaceId}::uuid`.execute(berth.server.database.db);
    };
    await lapse();
    await flushAll(); // the instance holding the open stream renews the row at its flush
    expect((await lifecycle.tick()).disconnected).toBe(0);
    controller.abort();
    await new Promise((r) => setTimeout(r, 200));
    await lapse();
    expect((await lifecycle.tick()).disconnected).toBe(1);
    expect((await berth.grpc.getWorkspace({ sessionId: ws.sessionId })).workspace!.lifecycleState).toBe(LifecycleState.STRANDED);
  });
});

// ---- kill -9 ------------------------------------------------------------------------------


needs({ postgres: true })("kill -9 of a real server, restart on the same database", () => {
  let database: TestDatabase;
  afterAll(async () => {
    await database?.drop();
  });
  // A restart keeps the instance's name (here fixed; by default host and gRPC port): that is how
  // it recognises its previous incarnation's workspaces.
  const env = () => ({ DATABASE_URL: database.url!, BERTH_INSTANCE_NAME: "killed-instance" });

  it("every non-terminal workspace is stranded, each resumable by its agent, every acknowledged write present", async () => {
    database = await createTestDatabase("postgres");
    const first = await serve(env());
    const c1 = createGrpcClient(WorkspaceService, first.grpc);
    const repoId = (await c1.registerRepository({ name: "killed" })).repository!.id;
    const sessions: { sessionId: string; agentId: string; workspaceId: string; changesetId: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const agentId = `agent-${String.fromCharCode(97 + i)}`;
      const ws = (await c1.createWorkspace({ repoId, baseCommit: "abc123", mode: i % 2 ? WorkspaceMode.PERSISTENT : WorkspaceMode.EPHEMERAL, agentId })).workspace!;
      await c1.heartbeat({ sessionId: ws.sessionId });
      sessions.push({ sessionId: ws.sessionId, agentId, workspaceId: ws.workspaceId, changesetId: ws.changesetId });
    }
    // Acknowledged writes: one changeset submitted, one closed (terminal: an ephemeral one is destroyed).
    await c1.transitionChangeset({ changesetId: sessions[0]!.changesetId, toState: ChangesetState.SUBMITTED });
    await c1.transitionChangeset({ changesetId: sessions[2]!.changesetId, toState: ChangesetState.CLOSED });
    c1.close();
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));

    const second = await serve(env());
    const reconcile = second.lines.find((l) => l.msg === "startup reconcile");
    expect(reconcile).toMatchObject({ stranded: 5, destroyed: 1 });
    const c2 = createGrpcClient(WorkspaceService, second.grpc);
    try {
      for (const [i, s] of sessions.entries()) {
        const ws = (await c2.getWorkspace({ sessionId: s.sessionId })).workspace!;
        if (i === 2) {
          expect(ws.lifecycleState).toBe(LifecycleState.DESTROYED);
          continue;
        }
        expect(ws.lifecycleState).toBe(LifecycleState.STRANDED);
        expect(ws.lifecycleReason).toBe("startup_reconcile");
        const err = await grpcFailure(c2.heartbeat({ sessionId: s.sessionId }));
        expect(err.errorInfo?.reason).toBe("SESSION_STRANDED");
        const resumed = await c2.resumeSession({ deadSessionId: s.sessionId, agentId: s.agentId });
        expect(resumed.workspace!.workspaceId).toBe(s.workspaceId);
        expect(resumed.workspace!.changesetState).toBe(i === 0 ? ChangesetState.SUBMITTED : ChangesetState.DRAFT);
        await c2.heartbeat({ sessionId: resumed.newSessionId });
      }
    } finally {
      c2.close();
    }
  }, 120_000);
});
