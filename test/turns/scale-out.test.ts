/**
 * Turns on several instances sharing one PostgreSQL (docs/turns.md, "Several instances"): at most
 * one RUNNING turn per session whichever instance a call reaches, turn RPCs forwarded to the
 * instance holding the session's environment, and a dead owner's running turn failed (owner_lost).
 * In-process servers, each with its own BERTH_ENV_ROOT (its own "disk") and its own grpc-js client.
 */
import { existsSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { OnBusy, TurnService, TurnState } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import type { OpenedDatabase } from "../../src/platform/database.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { failure, rpcFailure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth, type TurnBerthOptions } from "./helpers.js";

const MARKER = ".berth-env";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually(ok: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await ok()) && Date.now() < until) await sleep(20);
}

function p50(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
}

needs({ postgres: true })("turns on several instances", () => {
  let database: TestDatabase;
  const pools: OpenedDatabase[] = [];
  const berths: TurnBerth[] = [];
  let a: TurnBerth;
  let b: TurnBerth;
  let c: TurnBerth;
  let source: string;

  /** Another instance on the same database, with a pool of its own. */
  async function instance(name: string, wrapOverlay?: TurnBerthOptions["wrapOverlay"]): Promise<TurnBerth> {
    const opened = await database.reopen();
    pools.push(opened);
    const berth = await startTurnBerth({ database: { ...database, opened }, instanceName: name, ...(wrapOverlay ? { wrapOverlay } : {}) });
    berths.push(berth);
    return berth;
  }

  const db = () => database.opened.db;
  const runningRows = async (workspaceId: string) =>
    (await sql<{ id: string; instance_id: string }>`SELECT id, instance_id FROM turns WHERE workspace_id = ${workspaceId}::uuid AND state = 'running'`.execute(db())).rows;
  const turnRow = async (turnId: string) =>
    (await sql<{ state: string; outcome: string | null; end_reason: string; instance_id: string }>`SELECT state, outcome, end_reason, instance_id FROM turns WHERE id = ${turnId}::uuid`.execute(db())).rows[0];

  beforeAll(async () => {
    source = makeGitRepo(30);
    database = await createTestDatabase("postgres");
    a = await startTurnBerth({ database, instanceName: "scale-a" });
    berths.push(a);
    b = await instance("scale-b");
    c = await instance("scale-c");
  });
  afterAll(async () => {
    for (const berth of berths.reverse()) await berth.close().catch(() => {});
    for (const p of pools) await p.close().catch(() => {});
    await database?.drop();
    rmSync(source, { recursive: true, force: true });
  });

  it("answers GetPoolStats for every live instance's pool, summed, whichever instance is asked", async () => {
    const one = await newSession(a, source);
    const two = await newSession(b, source);
    const before = await a.turns.getPoolStats({});
    const t1 = await a.turns.beginTurn({ sessionId: one.sessionId });
    const t2 = await b.turns.beginTurn({ sessionId: two.sessionId });
    // Each turn runs where it began: one busy environment on A, one on B.
    expect(a.server.turns.stats().busy).toBe(1);
    expect(b.server.turns.stats().busy).toBe(1);
    for (const asked of [a, b, c]) {
      const stats = await asked.turns.getPoolStats({});
      expect(stats.busy).toBe(2);
      expect(stats.capacity).toBe(a.server.turns.stats().capacity * 3);
      expect(stats.coldAcquires - before.coldAcquires).toBe(2n);
    }
    await a.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    const after = await c.turns.getPoolStats({});
    expect(after.busy).toBe(0);
    expect(after.idle - before.idle).toBe(2);
  });

  it("advertises every instance's gRPC address in its instances row", async () => {
    const rows = (await sql<{ id: string; advertise_addr: string | null }>`SELECT id, advertise_addr FROM instances WHERE stopped_at IS NULL`.execute(db())).rows;
    for (const berth of [a, b, c]) {
      expect(rows.find((r) => r.id === berth.server.registry.instanceId)?.advertise_addr).toBe(berth.server.grpcAddress);
    }
  });

  it("runs the steer sequence with the steer sent to the other instance: one environment, and the third turn finds it alive", async () => {
    const { sessionId, workspaceId } = await newSession(a, source);
    let running: string | undefined;
    const violations: string[] = [];
    const poll = setInterval(() => {
      if (running && !existsSync(path.join(running, MARKER))) violations.push(`missing during a running turn: ${running}`);
    }, 1);
    const before = await a.turns.getPoolStats({});

    const t1 = await a.turns.beginTurn({ sessionId });
    running = t1.environmentPath;
    await sleep(20); // the long turn
    running = undefined;
    const t2 = await b.turns.beginTurn({ sessionId, onBusy: OnBusy.SUPERSEDE }); // the steer, on B
    running = t2.environmentPath;
    expect(t2.supersededTurnId).toBe(t1.turnId);
    expect(t2.environmentPath.startsWith(a.envRoot)).toBe(true); // built where the environment lives
    expect(existsSync(path.join(b.envRoot, workspaceId))).toBe(false); // never on B
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(false);
    expect((await b.turns.turnHeartbeat({ turnId: t2.turnId })).current).toBe(true);
    expect((await c.turns.turnHeartbeat({ turnId: t2.turnId })).current).toBe(true);
    await sleep(10);
    running = undefined;
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });

    const t3 = await c.turns.beginTurn({ sessionId }); // the third turn, on yet another instance
    running = t3.environmentPath;
    expect(t3.warm).toBe(true);
    expect(t3.environmentPath).toBe(t2.environmentPath);
    writeFileSync(path.join(t3.environmentPath, "third.txt"), "works\n");
    running = undefined;
    const ended = await b.turns.endTurn({ turnId: t3.turnId, outcome: TurnOutcome.COMPLETED });
    clearInterval(poll);

    expect(ended.capturedPaths).toEqual(["third.txt"]);
    expect(violations).toEqual([]);
    const after = await a.turns.getPoolStats({});
    expect(after.coldAcquires - before.coldAcquires).toBe(2n);
    expect(after.warmAcquires - before.warmAcquires).toBe(1n);
    for (const berth of [b, c]) expect(existsSync(path.join(berth.envRoot, workspaceId))).toBe(false);
    const list = await c.turns.listTurns({ sessionId });
    expect(list.turns.map((t) => [t.turnId, t.state])).toEqual([
      [t3.turnId, TurnState.ENDED],
      [t2.turnId, TurnState.ENDED],
      [t1.turnId, TurnState.SUPERSEDED],
    ]);
  });

  it("answers REJECT on another instance with TURN_IN_PROGRESS naming the running turn, the owner's status unchanged (gRPC and Connect)", async () => {
    const { sessionId, workspaceId } = await newSession(a, source);
    const t1 = await a.turns.beginTurn({ sessionId });
    const direct = await failure(a.turns.beginTurn({ sessionId, onBusy: OnBusy.REJECT }));
    const forwarded = await failure(b.turns.beginTurn({ sessionId, onBusy: OnBusy.REJECT }));
    expect(forwarded).toMatchObject({ code: "FAILED_PRECONDITION", reason: "TURN_IN_PROGRESS" });
    expect(forwarded.metadata.turn_id).toBe(t1.turnId);
    expect(forwarded).toEqual(direct);
    const connect = createClient(TurnService, createConnectTransport({ baseUrl: c.server.httpUrl, httpVersion: "1.1" }));
    const viaConnect = await connect.beginTurn({ sessionId, onBusy: OnBusy.REJECT }).then(
      () => undefined,
      (err: unknown) => rpcFailure(err),
    );
    expect(viaConnect).toEqual(direct);
    expect(await runningRows(workspaceId)).toEqual([{ id: t1.turnId, instance_id: a.server.registry.instanceId }]);
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(true);
    await c.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("returns the same turn to a client_turn_id retry on another instance, sequential or concurrent", async () => {
    const { sessionId } = await newSession(a, source);
    const t1 = await a.turns.beginTurn({ sessionId, clientTurnId: "msg-1" });
    const again = await b.turns.beginTurn({ sessionId, clientTurnId: "msg-1" });
    expect(again.turnId).toBe(t1.turnId);
    expect(again.supersededTurnId).toBe("");
    expect((await c.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(true);
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });

    const { sessionId: s2, workspaceId: w2 } = await newSession(b, source);
    const all = await Promise.all([a, b, c, a, b, c].map((berth) => berth.turns.beginTurn({ sessionId: s2, clientTurnId: "msg-2" })));
    expect(new Set(all.map((r) => r.turnId)).size).toBe(1);
    const rows = (await sql<{ id: string }>`SELECT id FROM turns WHERE session_id = ${s2}::uuid`.execute(db())).rows;
    expect(rows.map((r) => r.id)).toEqual([all[0]!.turnId]);
    expect((await runningRows(w2)).map((r) => r.id)).toEqual([all[0]!.turnId]);
    await c.turns.endTurn({ turnId: all[0]!.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("answers a retried EndTurn, on any instance, with the paths the first EndTurn captured", async () => {
    // The first answer can be lost on the way (the instance that forwarded it died): the retry
    // must not read as "nothing was captured".
    const { sessionId } = await newSession(a, source);
    const t = await a.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t.environmentPath, "retried.txt"), "captured once\n");
    writeFileSync(path.join(t.environmentPath, ".gitignore"), "*.log\n");
    writeFileSync(path.join(t.environmentPath, "build.log"), "left out\n");
    const first = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect([...first.capturedPaths].sort()).toEqual([".gitignore", "retried.txt"]);
    expect(first.leftOut.map((l) => l.path)).toEqual(["build.log"]);
    for (const berth of [a, b, c]) {
      const again = await berth.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
      expect(again.capturedPaths).toEqual(first.capturedPaths);
      expect(again.leftOut).toEqual(first.leftOut);
      expect(again.turn?.state).toBe(TurnState.ENDED);
    }
  });

  it("keeps exactly one RUNNING turn for 20 concurrent BeginTurns (SUPERSEDE and REJECT) over three instances, and one environment", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const three = [a, b, c];
    const lostBefore = await Promise.all(three.map(async (x) => (await x.turns.getPoolStats({})).evictions["lost-race"] ?? 0n));
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => three[i % 3]!.turns.beginTurn({ sessionId, onBusy: i % 2 === 0 ? OnBusy.SUPERSEDE : OnBusy.REJECT })),
    );
    const outcomes = new Map<string, number>();
    for (const r of results) {
      const key = r.status === "fulfilled" ? "OK" : `${rpcFailure(r.reason).code} ${rpcFailure(r.reason).reason}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    const lost = (await Promise.all(three.map(async (x, i) => ((await x.turns.getPoolStats({})).evictions["lost-race"] ?? 0n) - lostBefore[i]!))).reduce((x, y) => x + y, 0n);
    console.log(`20 concurrent BeginTurns over three instances: ${JSON.stringify(Object.fromEntries(outcomes))}; environments torn down after a lost race: ${lost}`);
    for (const key of outcomes.keys()) {
      expect(["OK", "FAILED_PRECONDITION TURN_IN_PROGRESS", "ABORTED TURN_SUPERSEDED", "ABORTED TURN_RACE_LOST", "UNAVAILABLE TURN_OWNER_MOVED"]).toContain(key);
    }
    expect(outcomes.get("OK") ?? 0).toBeGreaterThanOrEqual(1);

    const running = await runningRows(workspaceId);
    expect(running).toHaveLength(1);
    const winner = three.find((x) => x.server.registry.instanceId === running[0]!.instance_id)!;
    expect(winner).toBeDefined();
    const dirOf = (x: TurnBerth) => path.join(x.envRoot, workspaceId);
    await eventually(() => three.every((x) => existsSync(dirOf(x)) === (x === winner)));
    for (const x of three) expect([x.server.registry.instanceId, existsSync(dirOf(x))]).toEqual([x.server.registry.instanceId, x === winner]);
    expect(existsSync(path.join(dirOf(winner), MARKER))).toBe(true);
    for (const x of three) expect((await x.turns.turnHeartbeat({ turnId: running[0]!.id })).current).toBe(true);
    await a.turns.endTurn({ turnId: running[0]!.id, outcome: TurnOutcome.COMPLETED });
    expect(await runningRows(workspaceId)).toEqual([]);
  });

  it("never forwards a forwarded call again: the non-owner answers UNAVAILABLE TURN_OWNER_MOVED", async () => {
    const { sessionId } = await newSession(a, source);
    const t1 = await a.turns.beginTurn({ sessionId });
    const forwardedHere = { metadata: { "x-berth-forwarded": "some-other-instance" } };
    expect(await failure(b.turns.beginTurn({ sessionId }, forwardedHere))).toMatchObject({ code: "UNAVAILABLE", reason: "TURN_OWNER_MOVED" });
    expect(await failure(b.turns.turnHeartbeat({ turnId: t1.turnId }, forwardedHere))).toMatchObject({ code: "UNAVAILABLE", reason: "TURN_OWNER_MOVED" });
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(true);
    await a.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.FAILED });
  });

  it("fails the running turn of a dead owner (owner_lost) and begins the next turn cold on a survivor", async () => {
    const doomed = await instance("scale-doomed");
    const { sessionId, workspaceId } = await newSession(b, source);
    const t1 = await doomed.turns.beginTurn({ sessionId });
    expect(t1.environmentPath.startsWith(doomed.envRoot)).toBe(true);
    // The owner dies: its server stops, and its rows look like a crash (never stopped, silent for
    // an hour; the turn still RUNNING — a graceful stop captures and cancels it, a crash does not).
    await doomed.close();
    await sql`UPDATE instances SET stopped_at = NULL, heartbeat_at = now() - interval '1 hour' WHERE id = ${doomed.server.registry.instanceId}::uuid`.execute(db());
    expect((await turnRow(t1.turnId))).toMatchObject({ state: "cancelled", end_reason: "server_shutdown" });
    await sql`UPDATE turns SET state = 'running', end_reason = '', ended_at = NULL WHERE id = ${t1.turnId}::uuid`.execute(db());
    expect((await turnRow(t1.turnId))?.state).toBe("running");

    const t2 = await c.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(false);
    expect(t2.supersededTurnId).toBe("");
    expect(t2.environmentPath.startsWith(c.envRoot)).toBe(true);
    expect(await turnRow(t1.turnId)).toMatchObject({ state: "ended", outcome: "failed", end_reason: "owner_lost" });
    expect(await runningRows(workspaceId)).toEqual([{ id: t2.turnId, instance_id: c.server.registry.instanceId }]);
    const events = (await sql<{ kind: string; reason: string }>`SELECT kind, reason FROM events WHERE session_id = ${sessionId}::uuid AND kind = 'turn.ended'`.execute(db())).rows;
    expect(events).toContainEqual({ kind: "turn.ended", reason: "owner_lost" });
    expect((await a.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(false);
    expect((await failure(a.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED }))).reason).toBe("TURN_NOT_RUNNING");
    await a.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("answers CancelTurn's settled for a finished turn from the instance that ran it, not from another one", async () => {
    // The owner's teardown captures through the overlay: held open by a gate, so it is certainly
    // still running when the other instance is asked.
    let open!: () => void;
    let gate: Promise<void> | undefined = new Promise<void>((r) => (open = r));
    const owner = await instance("scale-gated", (real) => ({
      ...real,
      entries: (w) => real.entries(w),
      readBase: (w, p) => real.readBase(w, p),
      usage: (w) => real.usage(w),
      deleteFile: (i) => real.deleteFile(i),
      writeFile: async (i) => {
        if (gate) await gate;
        return real.writeFile(i);
      },
    }));
    const { sessionId } = await newSession(owner, source);
    const t = await owner.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t.environmentPath, "held.txt"), "captured once the gate opens\n");
    expect((await owner.turns.cancelTurn({ turnId: t.turnId })).settled).toBe(false);
    // Through another instance: the teardown is still held, so it is not settled.
    expect(await b.turns.cancelTurn({ turnId: t.turnId })).toMatchObject({ cancelled: false, settled: false });
    open();
    gate = undefined;
    let again = await b.turns.cancelTurn({ turnId: t.turnId });
    for (let i = 0; i < 500 && !again.settled; i++) {
      await sleep(10);
      again = await b.turns.cancelTurn({ turnId: t.turnId });
    }
    expect(again.settled).toBe(true);
    expect(existsSync(t.environmentPath)).toBe(false);
  });

  it("fails a dead owner's running turn in the sweep, with no call naming the turn, once", async () => {
    const doomed = await instance("scale-doomed-2");
    const { sessionId } = await newSession(b, source);
    const t1 = await doomed.turns.beginTurn({ sessionId });
    // A crash, as in the test above: never stopped, silent for an hour, the turn still RUNNING.
    await doomed.close();
    await sql`UPDATE instances SET stopped_at = NULL, heartbeat_at = now() - interval '1 hour' WHERE id = ${doomed.server.registry.instanceId}::uuid`.execute(db());
    await sql`UPDATE turns SET state = 'running', end_reason = '', ended_at = NULL WHERE id = ${t1.turnId}::uuid`.execute(db());
    // Two survivors sweep (the timers are off in these tests: called directly); the turn ends once.
    const ended = (await Promise.all([a, c].map((x) => x.server.turns.ownership.failDeadOwners()))).reduce((x, y) => x + y, 0);
    expect(ended).toBe(1);
    expect(await turnRow(t1.turnId)).toMatchObject({ state: "ended", outcome: "failed", end_reason: "owner_lost" });
    const events = (await sql<{ kind: string; reason: string }>`SELECT kind, reason FROM events WHERE session_id = ${sessionId}::uuid AND kind = 'turn.ended'`.execute(db())).rows;
    expect(events).toEqual([{ kind: "turn.ended", reason: "owner_lost" }]);
  });

  it("keeps a forwarded BeginTurn and TurnHeartbeat under 50 ms at p50 (100 calls each; the figures: npm run bench -- two-instances)", { timeout: 120_000 }, async () => {
    const { sessionId } = await newSession(a, undefined);
    const first = await a.turns.beginTurn({ sessionId });
    await a.turns.endTurn({ turnId: first.turnId, outcome: TurnOutcome.COMPLETED });
    const N = 100;
    const begin = { local: [] as number[], forwarded: [] as number[] };
    for (let i = 0; i < N; i++) {
      for (const [via, into] of [[a, begin.local], [b, begin.forwarded]] as const) {
        const t0 = performance.now();
        const r = await via.turns.beginTurn({ sessionId });
        into.push(performance.now() - t0);
        expect(r.warm).toBe(true);
        await a.turns.endTurn({ turnId: r.turnId, outcome: TurnOutcome.COMPLETED });
      }
    }
    const running = await a.turns.beginTurn({ sessionId });
    const beat = { local: [] as number[], forwarded: [] as number[] };
    for (let i = 0; i < N; i++) {
      for (const [via, into] of [[a, beat.local], [b, beat.forwarded]] as const) {
        const t0 = performance.now();
        const r = await via.turns.turnHeartbeat({ turnId: running.turnId });
        into.push(performance.now() - t0);
        expect(r.current).toBe(true);
      }
    }
    await a.turns.endTurn({ turnId: running.turnId, outcome: TurnOutcome.COMPLETED });
    const f = (x: number) => x.toFixed(2);
    const line = (name: string, m: { local: number[]; forwarded: number[] }) =>
      `${name}: local p50 ${f(p50(m.local))} ms, forwarded p50 ${f(p50(m.forwarded))} ms, added ${f(p50(m.forwarded) - p50(m.local))} ms`;
    console.log(`[scale-out latency, ${N} calls each] ${line("BeginTurn (warm)", begin)}; ${line("TurnHeartbeat", beat)}`);
    expect(p50(begin.forwarded)).toBeLessThan(50);
    expect(p50(beat.forwarded)).toBeLessThan(50);
  });
});
