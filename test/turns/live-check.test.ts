/**
 * The session check of a warm BeginTurn (docs/turns.md, "The session check of a warm BeginTurn"):
 * a session held live here, its environment parked here, is checked on its live object and the
 * row's check is folded into the turn row's insert, which writes only while the workspace row
 * still holds what the check relied on. These tests move the row under the live object — by
 * direct SQL (no event: this instance's followers never learn it) and by a second instance whose
 * commits this instance's feed is kept from seeing (the sequencer's lock held) — and check that
 * BeginTurn answers as the full check (ownedSession) would, writes no turn, and leaves the
 * environment parked (or to the session end that evicts it), nothing of the agent's work lost.
 */
import { randomUUID } from "node:crypto";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { SEQUENCER_LOCK_KEY } from "../../src/delivery/sequencer.js";
import type { OpenedDatabase } from "../../src/platform/database.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { rpcFailure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

const MARKER = ".berth-env";

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Counts the registry's row reads of sessions (getWorkspace) while `fn` runs. */
async function rowReads<T>(registry: WorkspaceRegistry, fn: () => Promise<T>): Promise<{ result: T; reads: number }> {
  const original = registry.getWorkspace;
  let reads = 0;
  registry.getWorkspace = function (this: WorkspaceRegistry, sessionId: string) {
    reads++;
    return original.call(this, sessionId);
  };
  try {
    return { result: await fn(), reads };
  } finally {
    registry.getWorkspace = original;
  }
}

needs({ postgres: true })("the session check of a warm BeginTurn", () => {
  let database: TestDatabase;
  let second: OpenedDatabase;
  let a: TurnBerth;
  let b: TurnBerth;
  let source: string;

  const db = () => database.opened.db;
  const turnRows = async (workspaceId: string) =>
    (await sql<{ id: string; state: string }>`SELECT id, state FROM turns WHERE workspace_id = ${workspaceId}::uuid ORDER BY seq`.execute(db())).rows;
  const startedEvents = async (workspaceId: string) =>
    Number((await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE workspace_id = ${workspaceId}::uuid AND kind = 'turn.started'`.execute(db())).rows[0]!.n);

  /** A session on `berth` with one turn ended COMPLETED: its environment parked IDLE there. */
  async function parkedSession(berth: TurnBerth) {
    const s = await newSession(berth, source);
    const t = await berth.turns.beginTurn({ sessionId: s.sessionId });
    await berth.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(existsSync(path.join(t.environmentPath, MARKER))).toBe(true);
    return { ...s, environmentPath: t.environmentPath, firstTurn: t.turnId };
  }

  beforeAll(async () => {
    source = makeGitRepo(10);
    database = await createTestDatabase("postgres");
    // One process each, by design: the instances' own clients and pools are what the tests look at.
    a = await startTurnBerth({ database, instances: 1, instanceName: "live-check-a" });
    second = await database.reopen();
    b = await startTurnBerth({ database: { ...database, opened: second }, instances: 1, instanceName: "live-check-b" });
  });
  afterAll(async () => {
    await b?.close().catch(() => {});
    await a?.close().catch(() => {});
    await second?.close().catch(() => {});
    await database?.drop();
    rmSync(source, { recursive: true, force: true });
  });

  it("reads no session row before the insert when the environment is parked here, and one when it is not", async () => {
    const s = await newSession(a, source);
    const cold = await rowReads(a.server.registry, () => a.turns.beginTurn({ sessionId: s.sessionId }));
    expect(cold.reads).toBe(1);
    expect(cold.result.warm).toBe(false);
    await a.turns.endTurn({ turnId: cold.result.turnId, outcome: TurnOutcome.COMPLETED });
    const warm = await rowReads(a.server.registry, () => a.turns.beginTurn({ sessionId: s.sessionId }));
    expect(warm.reads).toBe(0);
    expect(warm.result.warm).toBe(true);
    expect((await turnRows(s.workspaceId)).map((r) => r.state)).toEqual(["ended", "running"]);
    await a.turns.endTurn({ turnId: warm.result.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("a session stranded in its row after the live object last saw it: SESSION_STRANDED, no turn written, the environment parked again", async () => {
    const s = await parkedSession(a);
    const before = a.server.turns.stats();
    // Another instance's strand whose event this instance has not seen: only the row says so.
    await sql`UPDATE workspaces SET lifecycle = 'stranded', lifecycle_reason = 'elsewhere', stranded_at = now() WHERE id = ${s.workspaceId}::uuid`.execute(db());
    const err = await a.turns.beginTurn({ sessionId: s.sessionId }).then(() => undefined, (e: unknown) => e);
    expect(rpcFailure(err)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED", metadata: { reason: "elsewhere" } });
    expect(await turnRows(s.workspaceId)).toEqual([{ id: s.firstTurn, state: "ended" }]);
    expect(await startedEvents(s.workspaceId)).toBe(1);
    // Parked as it was: the directory, its seat (IDLE) and no turn; the live object dropped by the row read.
    expect(existsSync(path.join(s.environmentPath, MARKER))).toBe(true);
    expect(a.server.turns.stats()).toMatchObject({ busy: before.busy, idle: before.idle });
    expect(a.server.registry.liveWorkspace(s.sessionId)).toBeUndefined();
    expect(a.server.turns.runningTurns().filter((t) => t.workspaceId === s.workspaceId)).toEqual([]);
  });

  it("a stranded session whose parked environment turned out gone: the environment it rebuilt cold is torn down, the seat freed, no turn written", async () => {
    const s = await parkedSession(a);
    const before = a.server.turns.stats();
    rmSync(s.environmentPath, { recursive: true, force: true }); // the probe finds it dead: rebuilt cold
    await sql`UPDATE workspaces SET lifecycle = 'stranded', lifecycle_reason = 'elsewhere', stranded_at = now() WHERE id = ${s.workspaceId}::uuid`.execute(db());
    const err = await a.turns.beginTurn({ sessionId: s.sessionId }).then(() => undefined, (e: unknown) => e);
    expect(rpcFailure(err)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED" });
    expect(await turnRows(s.workspaceId)).toEqual([{ id: s.firstTurn, state: "ended" }]);
    const after = a.server.turns.stats();
    expect(after).toMatchObject({ busy: before.busy, idle: before.idle - 1 });
    expect(after.evictions["mount-lost"]).toBe((before.evictions["mount-lost"] ?? 0n) + 1n);
    expect(after.evictions["lost-race"]).toBe((before.evictions["lost-race"] ?? 0n) + 1n);
    expect(existsSync(s.environmentPath)).toBe(false);
  });

  it("a session resumed elsewhere (its row under a new session id) after the live object last saw it: SESSION_RESUMED naming the new id, no turn written", async () => {
    const s = await parkedSession(a);
    const newId = randomUUID();
    await sql`UPDATE workspaces SET session_id = ${newId}::uuid WHERE id = ${s.workspaceId}::uuid`.execute(db());
    await sql`INSERT INTO session_redirects (dead_session_id, new_session_id, workspace_id, created_at) VALUES (${s.sessionId}::uuid, ${newId}::uuid, ${s.workspaceId}::uuid, now())`.execute(db());
    const err = await a.turns.beginTurn({ sessionId: s.sessionId }).then(() => undefined, (e: unknown) => e);
    expect(rpcFailure(err)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_RESUMED", metadata: { new_session_id: newId } });
    expect(await turnRows(s.workspaceId)).toEqual([{ id: s.firstTurn, state: "ended" }]);
    expect(existsSync(path.join(s.environmentPath, MARKER))).toBe(true);
    expect(a.server.turns.runningTurns().filter((t) => t.workspaceId === s.workspaceId)).toEqual([]);
  });

  it("a changeset made terminal elsewhere: the turn begins as the full check allows, on the changeset state the row holds", async () => {
    const s = await parkedSession(a);
    const live = a.server.registry.liveWorkspace(s.sessionId)!;
    expect(live.changeset.state).toBe("draft");
    await sql`UPDATE changesets SET state = 'closed', reason = 'elsewhere', version = version + 1, updated_at = now() WHERE id = ${live.changeset.id}::uuid`.execute(db());
    const t = await a.turns.beginTurn({ sessionId: s.sessionId });
    // The same answer as before the fold (BeginTurn does not refuse a terminal changeset), but
    // begun only once the row was read: the live object now carries the row's state.
    expect(t.warm).toBe(true);
    expect(a.server.registry.liveWorkspace(s.sessionId)?.changeset.state).toBe("closed");
    expect((await turnRows(s.workspaceId)).map((r) => r.state)).toEqual(["ended", "running"]);
    expect(await startedEvents(s.workspaceId)).toBe(2);
    await a.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.FAILED });
  });

  it("a strand in flight when the turn row is written: the insert waits for it and then finds the session stranded", async () => {
    const s = await parkedSession(a);
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("UPDATE workspaces SET lifecycle = 'stranded', lifecycle_reason = 'in flight', stranded_at = now() WHERE id = $1", [s.workspaceId]);
      const begun = a.turns.beginTurn({ sessionId: s.sessionId }).then(() => undefined, (e: unknown) => e);
      await until("the turn row's insert to wait on the workspace row", async () => {
        // Asked outside the locker's transaction: pg_stat_activity is read once per transaction.
        const r = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO turns%'`.execute(db());
        return r.rows[0]!.n > 0;
      });
      await locker.query("COMMIT");
      expect(rpcFailure(await begun)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED", metadata: { reason: "in flight" } });
      expect(await turnRows(s.workspaceId)).toEqual([{ id: s.firstTurn, state: "ended" }]);
      expect(existsSync(path.join(s.environmentPath, MARKER))).toBe(true);
    } finally {
      await locker.query("ROLLBACK").catch(() => {});
      await locker.end();
    }
  });

  it("a strand answered by a second instance whose commit this one has not seen yet: SESSION_STRANDED, no turn; once seen, the parked environment is captured into the stranded session and resumes with it", async () => {
    const s = await parkedSession(a);
    const evictedBefore = a.server.turns.stats().evictions["session-ended"] ?? 0n;
    // The agent wrote between its turns: only the environment holds it until a capture.
    writeFileSync(path.join(s.environmentPath, "between-turns.txt"), "written after EndTurn\n");
    const wsB = createGrpcClient(WorkspaceService, b.server.grpcAddress);
    const turnsB = createGrpcClient(TurnService, b.server.grpcAddress);
    // Keeps every instance's feed from numbering (so from delivering) another instance's events.
    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    let held = false;
    try {
      await holder.query(`SELECT pg_advisory_lock(${SEQUENCER_LOCK_KEY.toString()}::bigint)`);
      held = true;
      await wsB.strandSession({ sessionId: s.sessionId, reason: "on b" });
      expect(a.server.registry.liveWorkspace(s.sessionId)?.lifecycle).toBe("active"); // A has not learnt it
      const err = await a.turns.beginTurn({ sessionId: s.sessionId }).then(() => undefined, (e: unknown) => e);
      expect(rpcFailure(err)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED", metadata: { reason: "on b" } });
      expect(await turnRows(s.workspaceId)).toEqual([{ id: s.firstTurn, state: "ended" }]);
      expect(existsSync(path.join(s.environmentPath, MARKER))).toBe(true);
      // Through B too: it reads the row (not live there) and answers the same.
      expect(rpcFailure(await turnsB.beginTurn({ sessionId: s.sessionId }).then(() => undefined, (e: unknown) => e))).toMatchObject({ reason: "SESSION_STRANDED" });
      await holder.query(`SELECT pg_advisory_unlock(${SEQUENCER_LOCK_KEY.toString()}::bigint)`);
      held = false;
      // A learns the strand: its parked environment is captured ("ending") and torn down.
      // Awaited by its count, not by the directory's absence: the rename that moves it aside is
      // visible on disk before the teardown's continuation (which counts it) has run.
      await until("the parked environment's eviction on A", () => (a.server.turns.stats().evictions["session-ended"] ?? 0n) > evictedBefore);
      expect(a.server.turns.stats().evictions["session-ended"]).toBe(evictedBefore + 1n);
      expect(existsSync(s.environmentPath)).toBe(false);
      const { newSessionId } = await wsB.resumeSession({ deadSessionId: s.sessionId, agentId: "agent-a" });
      expect(Buffer.from((await wsB.readFile({ sessionId: newSessionId, path: "between-turns.txt" })).content).toString()).toBe("written after EndTurn\n");
      expect(await turnRows(s.workspaceId)).toEqual([{ id: s.firstTurn, state: "ended" }]);
    } finally {
      if (held) await holder.query(`SELECT pg_advisory_unlock(${SEQUENCER_LOCK_KEY.toString()}::bigint)`).catch(() => {});
      await holder.end();
      wsB.close();
      turnsB.close();
    }
  });
});
