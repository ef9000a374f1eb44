/**
 * Liveness across instances (docs/lifecycle.md, "Liveness across instances"): two real servers
 * on one PostgreSQL behind a per-call load balancer must behave as one. A session's activity is
 * a fact in the database: a Heartbeat, an open AttachSession stream or a running turn on ANY
 * instance keeps it connected, and the owner's GC reads the database before it strands. Instance
 * liveness is judged by the database's clock, never the application's.
 *
 * The checks made while a session must stay connected read the row with SQL (or the owner's
 * memory) on purpose: GetWorkspace is itself activity, so asking it would keep the session alive.
 */
import { rmSync } from "node:fs";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LifecycleState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { ManualClock } from "../../src/platform/clock.js";
import { activityFlushFor } from "../../src/sessions/lifecycle.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { makeGitRepo, startTurnBerth, type TurnBerth } from "../turns/helpers.js";

const LEASE_MS = 4000;
const GC_MS = 1000;
/** The activity flush period (LifecycleSettings.activityFlushMs' default for this lease). */
const FLUSH_MS = activityFlushFor(LEASE_MS);
const LIVENESS_ENV = { BERTH_SESSION_LEASE_MS: String(LEASE_MS), BERTH_GC_INTERVAL_MS: String(GC_MS) };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function row(database: TestDatabase, sessionId: string): Promise<{ lifecycle: string; lifecycle_reason: string } | undefined> {
  const r = await sql<{ lifecycle: string; lifecycle_reason: string }>`
    SELECT lifecycle, lifecycle_reason FROM workspaces WHERE session_id = ${sessionId}::uuid`.execute(database.opened.db);
  return r.rows[0];
}

/** Waits (polling the row, which is not activity) until the session is no longer active; returns how long that took. */
async function untilStranded(database: TestDatabase, sessionId: string, from: number, timeoutMs: number): Promise<number> {
  for (;;) {
    const r = await row(database, sessionId);
    if (r?.lifecycle !== "active") return Date.now() - from;
    if (Date.now() - from > timeoutMs) throw new Error(`not stranded within ${timeoutMs} ms`);
    await sleep(25);
  }
}

/** Keeps calling `beat` every second for `ms`, checking between beats that the session is still active (by SQL). */
async function keepAlive(database: TestDatabase, sessionId: string, ms: number, beat: () => Promise<unknown>): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await beat();
    expect((await row(database, sessionId))?.lifecycle, "stranded while kept alive").toBe("active");
    await sleep(1000);
  }
}

needs({ postgres: true })("liveness across two instances on one database (lease 4 s, GC every 1 s)", () => {
  let database: TestDatabase;
  let a: TurnBerth;
  let b: TurnBerth;
  let repoId: string;
  let source: string;
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    source = makeGitRepo(5);
    a = await startTurnBerth({ database, env: LIVENESS_ENV });
    const second = await database.reopen();
    b = await startTurnBerth({ database: { ...database, opened: second }, env: LIVENESS_ENV });
    repoId = (await a.ws.registerRepository({ name: "liveness", sourcePath: source })).repository!.id;
  });
  afterAll(async () => {
    await b?.close();
    await b?.database.opened.close();
    await a?.close();
    await database?.drop();
    if (source) rmSync(source, { recursive: true, force: true });
  });

  const createOnA = async () =>
    (await a.ws.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "agent-lb" })).workspace!;

  /** Only the owner's GC strands a live session for disconnection: A dropped it and its tick (logged at the tick's end) says so. */
  const strandedByA = async (sessionId: string) => {
    const byA = () => a.server.registry.liveWorkspace(sessionId) === undefined && a.logs.some((l) => l.msg === "lifecycle GC tick" && (l.disconnected as number) >= 1);
    for (let i = 0; i < 100 && !byA(); i++) await sleep(20);
    expect(a.server.registry.liveWorkspace(sessionId)).toBeUndefined();
    expect(a.logs.filter((l) => l.msg === "lifecycle GC tick").map((l) => l.disconnected)).toContain(1);
    a.logs.length = 0;
  };

  it("a Heartbeat through B, which does not hold the session, renews its lease in PostgreSQL before it answers", async () => {
    const ws = await createOnA();
    const stored = async () =>
      (await sql<{ t: Date }>`SELECT last_active_at AS t FROM workspaces WHERE session_id = ${ws.sessionId}::uuid`.execute(database.opened.db)).rows[0]!.t.getTime();
    const created = await stored();
    while (Date.now() <= created + 20) await sleep(5); // the heartbeat's time must differ from the creation's
    const before = Date.now();
    await b.ws.heartbeat({ sessionId: ws.sessionId });
    // Not at B's next activity flush: now (same host, same clock as the servers in this process).
    expect(await stored()).toBeGreaterThanOrEqual(before);
  });

  it("a session created on A, kept alive by Heartbeats through B every second for 10 s, is never stranded; once they stop, A strands it within lease + GC + flush", async () => {
    const ws = await createOnA();
    await keepAlive(database, ws.sessionId, 10_000, () => b.ws.heartbeat({ sessionId: ws.sessionId }));
    // GetWorkspace on both (activity too: the lease runs from the last of them).
    expect((await b.ws.getWorkspace({ sessionId: ws.sessionId })).workspace!.lifecycleState).toBe(LifecycleState.ACTIVE);
    expect((await a.ws.getWorkspace({ sessionId: ws.sessionId })).workspace!.lifecycleState).toBe(LifecycleState.ACTIVE);
    const last = Date.now();
    const took = await untilStranded(database, ws.sessionId, last, LEASE_MS + GC_MS + FLUSH_MS + 3000);
    console.log(`[measure] heartbeats through B stopped → stranded by A after ${took} ms (lease ${LEASE_MS}, GC ${GC_MS}, flush ${FLUSH_MS})`);
    expect(await row(database, ws.sessionId)).toEqual({ lifecycle: "stranded", lifecycle_reason: "disconnected" });
    expect(took).toBeGreaterThanOrEqual(LEASE_MS - 500);
    expect(took).toBeLessThanOrEqual(LEASE_MS + GC_MS + FLUSH_MS);
    await strandedByA(ws.sessionId);
    expect((await failure(b.ws.heartbeat({ sessionId: ws.sessionId }))).reason).toBe("SESSION_STRANDED");
  }, 40_000);

  it("an AttachSession stream held open on B keeps a session owned by A connected past the lease; after it closes, A strands it", async () => {
    const ws = await createOnA();
    const controller = new AbortController();
    let opened!: () => void;
    const first = new Promise<void>((r) => (opened = r));
    const stream = (async () => {
      try {
        for await (const m of b.ws.attachSession({ sessionId: ws.sessionId }, { signal: controller.signal })) {
          if (m.message.case === "workspace") opened();
        }
      } catch {
        /* cancelled */
      }
    })();
    await first;
    await keepAlive(database, ws.sessionId, 2.5 * LEASE_MS, async () => {
      expect(a.server.registry.liveWorkspace(ws.sessionId)).toBeDefined();
    });
    controller.abort();
    await stream;
    const closed = Date.now();
    const took = await untilStranded(database, ws.sessionId, closed, LEASE_MS + GC_MS + FLUSH_MS + 3000);
    console.log(`[measure] AttachSession on B closed → stranded by A after ${took} ms`);
    expect(await row(database, ws.sessionId)).toEqual({ lifecycle: "stranded", lifecycle_reason: "disconnected" });
    expect(took).toBeLessThanOrEqual(LEASE_MS + GC_MS + FLUSH_MS);
    await strandedByA(ws.sessionId);
  }, 40_000);

  it("a long turn with only TurnHeartbeats (no session Heartbeat) on the owner keeps the session connected past the lease", async () => {
    const ws = await createOnA();
    const turn = await a.turns.beginTurn({ sessionId: ws.sessionId });
    await keepAlive(database, ws.sessionId, 2.5 * LEASE_MS, async () => {
      expect((await a.turns.turnHeartbeat({ turnId: turn.turnId })).current).toBe(true);
    });
    await a.turns.endTurn({ turnId: turn.turnId, outcome: TurnOutcome.COMPLETED });
    const ended = Date.now();
    const took = await untilStranded(database, ws.sessionId, ended, LEASE_MS + GC_MS + FLUSH_MS + 3000);
    console.log(`[measure] turn ended (TurnHeartbeats only) → stranded by A after ${took} ms`);
    expect(await row(database, ws.sessionId)).toEqual({ lifecycle: "stranded", lifecycle_reason: "disconnected" });
    expect(took).toBeLessThanOrEqual(LEASE_MS + GC_MS + FLUSH_MS);
    await strandedByA(ws.sessionId);
  }, 40_000);

  it("a RUNNING turn with no call at all keeps its session connected; after EndTurn the lease runs", async () => {
    const ws = await createOnA();
    const turn = await a.turns.beginTurn({ sessionId: ws.sessionId });
    await keepAlive(database, ws.sessionId, 2.5 * LEASE_MS, async () => undefined);
    await a.turns.endTurn({ turnId: turn.turnId, outcome: TurnOutcome.COMPLETED });
    const ended = Date.now();
    const took = await untilStranded(database, ws.sessionId, ended, LEASE_MS + GC_MS + FLUSH_MS + 3000);
    console.log(`[measure] silent running turn ended → stranded by A after ${took} ms`);
    expect(await row(database, ws.sessionId)).toEqual({ lifecycle: "stranded", lifecycle_reason: "disconnected" });
    expect(took).toBeLessThanOrEqual(LEASE_MS + GC_MS + FLUSH_MS);
    await strandedByA(ws.sessionId);
  }, 40_000);
});

needs({ postgres: true })("instance staleness by database time", () => {
  let database: TestDatabase;
  let a: TurnBerth;
  let c: TurnBerth;
  const clock = new ManualClock(Date.now() + 86_400_000); // C's application clock: a day ahead
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    a = await startTurnBerth({ database });
    const second = await database.reopen();
    c = await startTurnBerth({ database: { ...database, opened: second }, clock });
  });
  afterAll(async () => {
    await c?.close();
    await c?.database.opened.close();
    await a?.close();
    await database?.drop();
  });

  it("an instance whose heartbeat row is backdated by SQL is dead; one with a fresh row is not, whatever the app clock says", async () => {
    const repoId = (await a.ws.registerRepository({ name: "staleness" })).repository!.id;
    const ws = (await a.ws.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" })).workspace!;
    const aId = a.server.registry.instanceId!;
    // A's row is fresh by the database's clock: C, whose clock says a day has passed, leaves it alone.
    await c.server.lifecycle.tick();
    expect((await row(database, ws.sessionId))?.lifecycle).toBe("active");
    // A day behind now: by C's clock a row a minute old would look fresh, by the database's it is stale.
    clock.set(Date.now() - 86_400_000);
    await c.server.lifecycle.tick();
    expect((await row(database, ws.sessionId))?.lifecycle).toBe("active");
    // A's own heartbeat (every 5 s) may refresh the row between the backdate and the tick: try again then.
    for (let attempt = 0; attempt < 5 && (await row(database, ws.sessionId))?.lifecycle === "active"; attempt++) {
      await sql`UPDATE instances SET heartbeat_at = now() - interval '1 minute' WHERE id = ${aId}::uuid`.execute(database.opened.db);
      await c.server.lifecycle.tick();
    }
    expect(await row(database, ws.sessionId)).toEqual({ lifecycle: "stranded", lifecycle_reason: "owner_lost" });
  }, 30_000);
});
