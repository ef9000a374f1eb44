/**
 * How a hub learns of other instances' commits: the sequencer's NOTIFY berth_events, heard on
 * each hub's dedicated LISTEN connection. Two hubs on one PostgreSQL database with the safety-net
 * poll at 60 s, so only a notification (or the read after a reconnect) can deliver in time.
 * On PGlite there is no listener: local commits nudge the hub.
 */
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EventHub } from "../../src/delivery/hub.js";
import { LISTENER_APPLICATION_NAME } from "../../src/delivery/commit-listener.js";
import type { Event } from "../../src/delivery/event-store.js";
import type { Db, OpenedDatabase } from "../../src/platform/database.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { captureLogger } from "../support/berth.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { input, registryOn, silent, storedIds, until, writeEvents } from "./helpers.js";

const LONG_POLL_MS = 60_000;
const BOUND_MS = 1000;

/** `p`, or a failure naming `what` after ms. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Backend pids of the LISTEN connections on this database. */
async function listenPids(db: Db): Promise<number[]> {
  const r = await sql<{ pid: number }>`
    SELECT pid FROM pg_stat_activity
    WHERE datname = current_database() AND query LIKE 'LISTEN%' AND application_name = ${LISTENER_APPLICATION_NAME}
    ORDER BY pid`.execute(db);
  return r.rows.map((row) => row.pid);
}

/** A live watch of `hub` whose events are collected as they arrive. */
function collect(hub: EventHub): { events: Event[]; next(ms: number, what: string): Promise<Event>; stop(): void } {
  const ac = new AbortController();
  const iterator = hub.watch({}, ac.signal)[Symbol.asyncIterator]();
  const events: Event[] = [];
  return {
    events,
    async next(ms, what) {
      const r = await within(iterator.next(), ms, what);
      if (r.done) throw new Error("the watch ended");
      events.push(r.value);
      return r.value;
    },
    stop: () => ac.abort(),
  };
}

needs({ postgres: true })("LISTEN/NOTIFY between two hubs on one PostgreSQL", () => {
  let database: TestDatabase;
  let other: OpenedDatabase;
  /** The writing instance: its registry's commits nudge it. */
  let hubA: EventHub;
  /** The other instance: never nudged, polling every 60 s. */
  let hubB: EventHub;
  let registry: WorkspaceRegistry;
  let logsB: Record<string, unknown>[];

  beforeEach(async () => {
    database = await createTestDatabase("postgres");
    other = await database.reopen();
    logsB = [];
    hubA = new EventHub({ db: database.opened.db, logger: silent, listenUrl: database.url!, pollIntervalMs: LONG_POLL_MS });
    hubB = new EventHub({
      db: other.db,
      logger: captureLogger(logsB),
      listenUrl: database.url!,
      pollIntervalMs: LONG_POLL_MS,
      // A reconnect window wide enough for the test to commit while B is not listening.
      listener: { backoffInitialMs: 300 },
    });
    await hubA.start();
    await hubB.start();
    registry = registryOn(database.opened.db, () => hubA.nudge());
  });
  afterEach(async () => {
    await hubB?.stop();
    await hubA?.stop();
    await other?.close();
    await database?.drop();
  });

  it("an event committed through one hub reaches a subscriber of the other within 1 s (p50/p99 over 100 events)", async () => {
    expect(hubA.listening && hubB.listening).toBe(true);
    const watch = collect(hubB);
    const latencies: number[] = [];
    for (let i = 0; i < 100; i++) {
      await writeEvents(registry, [input(`session.n${i}`)]);
      const committed = performance.now();
      const e = await watch.next(BOUND_MS, `event ${i} on the other hub`);
      latencies.push(performance.now() - committed);
      expect(e.kind).toBe(`session.n${i}`);
    }
    watch.stop();
    const sorted = [...latencies].sort((x, y) => x - y);
    console.log(
      `[measure] commit on hub A → hub B subscriber, poll ${LONG_POLL_MS} ms, 100 events: ` +
        `p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms, max ${sorted.at(-1)!.toFixed(2)} ms`,
    );
    expect(watch.events.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => BigInt(i + 1)));
  });

  it("many commits at once: every one arrives, in order, with far fewer notifications than commits", async () => {
    const watch = collect(hubB);
    const notifies: string[] = [];
    // A third listener counts what the sequencer sends.
    const pg = (await import("pg")).default;
    const spy = new pg.Client({ connectionString: database.url! });
    await spy.connect();
    try {
      spy.on("notification", (n) => notifies.push(n.payload ?? ""));
      await spy.query("LISTEN berth_events");
      await Promise.all(Array.from({ length: 8 }, (_, w) => (async () => {
        for (let i = 0; i < 25; i++) await writeEvents(registry, [input(`session.w${w}`)]);
      })()));
      for (let i = 0; i < 200; i++) await watch.next(5000, `event ${i} of the burst`);
      watch.stop();
      expect(watch.events.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => BigInt(i + 1)));
      await until(() => notifies.includes("200"), 2000, "the notification of the last pass");
      // One notification per numbering pass, carrying the head seq, rising.
      expect(notifies.map(BigInt)).toEqual([...notifies.map(BigInt)].sort((x, y) => (x < y ? -1 : 1)));
      console.log(`[measure] 200 commits by 8 concurrent writers: ${notifies.length} notifications`);
      expect(notifies.length).toBeLessThan(200);
    } finally {
      await spy.end();
    }
  });

  it("its LISTEN connection killed, a hub reconnects, reads what it missed, and delivery goes on gap-free", async () => {
    const db = database.opened.db;
    const watch = collect(hubB);
    for (let i = 0; i < 5; i++) await writeEvents(registry, [input(`session.before${i}`)]);
    for (let i = 0; i < 5; i++) await watch.next(BOUND_MS, `event ${i} before the kill`);

    const killed = await listenPids(db);
    expect(killed).toHaveLength(2); // one per hub
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid IN (${sql.join(killed)})`.execute(db);
    await until(() => !hubB.listening, 5000, "hub B to notice its connection is gone");

    // Committed while B is not listening: their notifications never reach it.
    for (let i = 0; i < 5; i++) await writeEvents(registry, [input(`session.during${i}`)]);
    expect(hubB.listening).toBe(false);
    // Not the 60 s poll: the read on reconnect.
    for (let i = 0; i < 5; i++) await watch.next(5000, `event ${i} committed while B was not listening`);
    await until(() => hubA.listening && hubB.listening, 5000, "both hubs to listen again");
    const now = await listenPids(db);
    expect(now).toHaveLength(2);
    expect(now.filter((pid) => killed.includes(pid))).toEqual([]);

    for (let i = 0; i < 5; i++) {
      await writeEvents(registry, [input(`session.after${i}`)]);
      await watch.next(BOUND_MS, `event ${i} after the reconnect`);
    }
    watch.stop();
    expect(watch.events.map((e) => e.seq)).toEqual(Array.from({ length: 15 }, (_, i) => BigInt(i + 1)));
    expect(watch.events.map((e) => e.id)).toEqual(await storedIds(db));
    const messages = logsB.map((l) => l.msg);
    expect(messages).toContain("event listener: not listening; reconnecting (other instances' commits arrive by the poll meanwhile)");
    expect(messages).toContain("event listener: listening again");
  });

  it("stop() UNLISTENs and closes its connection promptly", async () => {
    expect(await listenPids(database.opened.db)).toHaveLength(2);
    const t0 = performance.now();
    await hubB.stop();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(hubB.listening).toBe(false);
    await until(async () => (await listenPids(database.opened.db)).length === 1, 2000, "hub B's LISTEN connection to close");
  });
});

describe("on PGlite", () => {
  it("the hub listens on nothing and local commits still arrive at once", async () => {
    const database = await createTestDatabase("pglite");
    const hub = new EventHub({ db: database.opened.db, logger: silent, listenUrl: database.opened.url, pollIntervalMs: LONG_POLL_MS });
    await hub.start();
    try {
      expect(hub.listening).toBe(false);
      const registry = registryOn(database.opened.db, () => hub.nudge());
      const watch = collect(hub);
      await writeEvents(registry, [input("session.local")]);
      expect((await watch.next(BOUND_MS, "the local event")).kind).toBe("session.local");
      watch.stop();
    } finally {
      await hub.stop();
      await database.drop();
    }
  });
});
