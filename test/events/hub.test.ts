/**
 * The event hub and WatchEvents' replay-then-live stream at the domain level, on real
 * PostgreSQL (and PGlite): no gap, no duplicate, under concurrent writers and interleaved
 * transactions; slow subscribers end with RESOURCE_EXHAUSTED; pruning gives OUT_OF_RANGE.
 */
import { sequencePending } from "../../src/delivery/sequencer.js";
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BerthError } from "../../src/platform/errors.js";
import type { EventFilter } from "../../src/delivery/filter.js";
import { EventHub, type SubscriberOptions } from "../../src/delivery/hub.js";
import { insertEvents, prepareEvent } from "../../src/platform/outbox.js";
import { EventPruner } from "../../src/delivery/pruner.js";
import { advanceRelayCursor, readRelayCursor, type Event } from "../../src/delivery/event-store.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { DATABASE_KINDS, createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs, postgresAvailable } from "../support/services.js";
import { REPO_A, REPO_B, input, registryOn, silent, storedIds, storedSeqs, until, writeEvents } from "./helpers.js";

/** Takes n events from a stream, failing after timeoutMs. */
async function take(
  hub: EventHub,
  afterSeq: bigint,
  n: number,
  filter: EventFilter = {},
  timeoutMs = 15_000,
  options: SubscriberOptions = {},
): Promise<Event[]> {
  const out: Event[] = [];
  if (n === 0) return out;
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), timeoutMs);
  try {
    for await (const e of hub.stream({ afterSeq, filter }, ac.signal, options)) {
      out.push(e);
      if (out.length === n) break;
    }
  } catch (err) {
    throw new Error(`after ${out.length}/${n} events: ${String(err)}`, { cause: err });
  } finally {
    clearTimeout(t);
  }
  return out;
}

function expectStrictlyIncreasing(events: readonly Event[]): void {
  for (let i = 1; i < events.length; i++) expect(events[i]!.seq > events[i - 1]!.seq, `seq ${events[i]!.seq} after ${events[i - 1]!.seq}`).toBe(true);
}

async function caught(p: Promise<unknown>): Promise<BerthError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BerthError) return err;
    throw err;
  }
  throw new Error("expected a BerthError");
}

describe.each(DATABASE_KINDS)("event hub on %s", (kind) => {
  let database: TestDatabase;
  let hub: EventHub;
  let registry: WorkspaceRegistry;

  // PGlite databases are slow to create: the secondary cases are defined once, on PostgreSQL
  // when it runs (PGlite otherwise), rather than skipped, so CI never reports a skip.
  const onlyOnce = (fn: () => void) => {
    if (kind === "postgres" || !DATABASE_KINDS.includes("postgres")) fn();
  };
  const pgAndPrimary = ((name: string, body: () => Promise<void>, timeout?: number) => onlyOnce(() => it(name, body, timeout))) as unknown as typeof it;
  // PostgreSQL-only cases: defined on PostgreSQL, and shown as skipped where it does not run.
  const postgresOnly = (name: string, body: () => Promise<void>, timeout?: number) => {
    if (kind === "postgres") it(name, body, timeout);
    else if (!postgresAvailable) needs({ postgres: true }).it(name, body, timeout);
  };

  beforeEach(async () => {
    database = await createTestDatabase(kind);
    hub = new EventHub({ db: database.opened.db, logger: silent, pollIntervalMs: 50, batchSize: 50 });
    await hub.start();
    registry = registryOn(database.opened.db, () => hub.nudge());
  });
  afterEach(async () => {
    await hub.stop();
    await database.drop();
  });

  it("replays stored events after after_seq, then streams live ones, with no gap and no duplicate", async () => {
    await writeEvents(registry, [input("session.created"), input("session.stranded")]);
    await writeEvents(registry, [input("session.resumed")]);
    const seqs = await storedSeqs(database.opened.db);
    const pending = take(hub, seqs[0]!, 4);
    await writeEvents(registry, [input("session.destroyed"), input("changeset.transitioned")]);
    const got = await pending;
    expect(got.map((e) => e.kind)).toEqual(["session.stranded", "session.resumed", "session.destroyed", "changeset.transitioned"]);
    expect(got.map((e) => e.id)).toEqual((await storedIds(database.opened.db)).slice(1));
    expectStrictlyIncreasing(got);
    expect(got[0]!.seq).toBe(seqs[1]);
    expect(got[0]!.reason).toBe("test");
  });

  pgAndPrimary("filters by repository, kind pattern (exact, prefix, suffix) and excluded session", async () => {
    const mine = randomUUID();
    await writeEvents(registry, [
      input("session.created", REPO_A),
      input("session.stranded", REPO_B),
      input("changeset.transitioned", REPO_A),
      input("session.stranded", REPO_A, { sessionId: mine }),
      input("session.abandoned", REPO_A),
      input("claim.stranded", REPO_A),
    ]);
    const kinds = async (filter: EventFilter, n: number) => (await take(hub, 0n, n, filter)).map((e) => `${e.kind}@${e.repoId === REPO_A ? "A" : "B"}`);
    expect(await kinds({ repoIds: [REPO_B] }, 1)).toEqual(["session.stranded@B"]);
    expect(await kinds({ kinds: ["session.*"], repoIds: [REPO_A] }, 3)).toEqual(["session.created@A", "session.stranded@A", "session.abandoned@A"]);
    expect(await kinds({ kinds: ["*.stranded"] }, 3)).toEqual(["session.stranded@B", "session.stranded@A", "claim.stranded@A"]);
    expect(await kinds({ kinds: ["*.stranded"], excludeSessionId: mine }, 2)).toEqual(["session.stranded@B", "claim.stranded@A"]);
    expect(await kinds({ kinds: ["changeset.transitioned", "session.abandoned"] }, 2)).toEqual(["changeset.transitioned@A", "session.abandoned@A"]);
  });

  it("under 8 concurrent writers a subscriber sees exactly what is stored, in seq order; resuming from any seq gives the rest", async () => {
    const fromStart = take(hub, 0n, 8 * 30 * 2, {}, 30_000);
    let midway: Promise<Event[]> | undefined;
    let midwayAfter = 0n;
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 30; i++) {
          // Alternating 1- and 3-event transactions, some with other work before the events.
          const n = i % 2 === 0 ? 1 : 3;
          await registry.uow.run(async ({ trx, record }) => {
            if (i % 3 === 0) await trx.selectFrom("events").select("seq").limit(1).execute();
            record(...Array.from({ length: n }, () => input(`session.w${w}`, w % 2 ? REPO_A : REPO_B)));
          });
          if (w === 0 && i === 10) {
            midwayAfter = (await storedSeqs(database.opened.db)).at(-1)!;
            midway = take(hub, midwayAfter, 8 * 30 * 2 - (await storedSeqs(database.opened.db)).length + 0, {}, 30_000);
          }
        }
      }),
    );
    const stored = await storedIds(database.opened.db);
    expect(stored).toHaveLength(8 * 30 * 2);
    const all = await fromStart;
    expect(all.map((e) => e.id)).toEqual(stored);
    expectStrictlyIncreasing(all);

    // The subscriber that joined midway (replay, then live) saw the rest exactly.
    const seqs = await storedSeqs(database.opened.db);
    const rest = seqs.filter((s) => s > midwayAfter);
    const mid = await midway!;
    expect(mid.length).toBeLessThanOrEqual(rest.length);
    expect(mid.map((e) => e.seq)).toEqual(rest.slice(0, mid.length));

    // Resuming from any seq yields exactly the events after it.
    for (const k of [0, 1, 17, 100, 239, 400, seqs.length - 2]) {
      const after = seqs[k]!;
      const expected = seqs.filter((s) => s > after);
      const got = await take(hub, after, expected.length);
      expect(got.map((e) => e.seq)).toEqual(expected);
    }
  });

  // PostgreSQL only: PGlite has one connection, so transactions cannot interleave.
  postgresOnly("an event inserted by a transaction still open is numbered after one committed meanwhile, and never skipped", async () => {
    const db = database.opened.db;
    const watching = take(hub, 0n, 2);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inserted!: () => void;
    const insertedP = new Promise<void>((r) => (inserted = r));
    const slow = db.transaction().execute(async (trx) => {
      await insertEvents([prepareEvent(input("session.slow")).row]).execute(trx);
      inserted();
      await gate; // stays open, its event inserted (staged first) but not committed
    });
    await insertedP;
    // The later writer does not wait for the open transaction: writers never serialise.
    await writeEvents(registry, [input("session.fast")]);
    await hub.sync();
    expect(hub.headSeq).toBe(1n);
    release();
    await slow;
    await hub.sync();
    const got = await watching;
    expect(got.map((e) => [e.kind, e.seq])).toEqual([["session.fast", 1n], ["session.slow", 2n]]);
  });

  postgresOnly("two sequencers on separate connections never number a row twice or leave a hole", async () => {
    const other = await database.reopen();
    try {
      const writers = Array.from({ length: 8 }, (_, w) =>
        (async () => {
          for (let i = 0; i < 30; i++) await writeEvents(registry, [input(`session.w${w}`), input(`session.w${w}b`)]);
        })(),
      );
      const sequencers = [database.opened.db, other.db].map((db) =>
        (async () => {
          for (let i = 0; i < 40; i++) await sequencePending(db);
        })(),
      );
      await Promise.all([...writers, ...sequencers]);
      const seqs = await storedSeqs(database.opened.db);
      expect(seqs).toEqual(Array.from({ length: 480 }, (_, i) => BigInt(i + 1)));
    } finally {
      await other.close();
    }
  });

  pgAndPrimary("a rolled-back transaction stores no event and leaves no hole readers stop at", async () => {
    await writeEvents(registry, [input("session.one")]);
    await expect(
      registry.uow.run(async ({ record }) => {
        record(input("session.never"));
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await expect(
      registry.uow.run(async ({ trx }) => {
        await insertEvents([prepareEvent(input("session.rolled_back")).row]).execute(trx);
        throw new Error("after insert");
      }),
    ).rejects.toThrow("after insert");
    await writeEvents(registry, [input("session.two")]);
    expect((await take(hub, 0n, 2)).map((e) => e.kind)).toEqual(["session.one", "session.two"]);
  });

  it("a subscriber that does not read ends with RESOURCE_EXHAUSTED and last_seq; resuming from it loses nothing", async () => {
    for (let i = 0; i < 3; i++) await writeEvents(registry, [input(`session.e${i}`)]);
    const ac = new AbortController();
    const it = hub.stream({ afterSeq: 0n, filter: {} }, ac.signal, { maxBufferedEvents: 5 })[Symbol.asyncIterator]();
    const first = await it.next();
    const second = await it.next();
    expect(second.done).toBe(false);
    // Now the subscriber stops reading while 30 more events are committed.
    for (let i = 3; i < 33; i++) await writeEvents(registry, [input(`session.e${i}`)]);
    await hub.sync();
    const deliveredSoFar: Event[] = [(first.value as Event), (second.value as Event)];
    let err: BerthError | undefined;
    for (;;) {
      try {
        const r = await it.next();
        if (r.done) break;
        deliveredSoFar.push(r.value);
      } catch (e) {
        err = e as BerthError;
        break;
      }
    }
    expect(err).toBeInstanceOf(BerthError);
    expect(err!.kind).toBe("resource_exhausted");
    expect(err!.reason).toBe("SUBSCRIBER_TOO_SLOW");
    const lastSeq = BigInt(err!.metadata.last_seq!);
    expect(lastSeq).toBe(deliveredSoFar.at(-1)!.seq);
    expect(hub.subscriberCount).toBe(0);
    const all = await storedSeqs(database.opened.db);
    const rest = await take(hub, lastSeq, all.filter((s) => s > lastSeq).length);
    expect([...deliveredSoFar, ...rest].map((e) => e.seq)).toEqual(all);
  });

  pgAndPrimary("ends with RESOURCE_EXHAUSTED on the byte bound too", async () => {
    const ac = new AbortController();
    const it = hub.stream({ afterSeq: 0n, filter: {} }, ac.signal, { maxBufferedBytes: 1000 })[Symbol.asyncIterator]();
    const pending = it.next();
    await writeEvents(registry, [input("session.first")]);
    await pending;
    await writeEvents(registry, Array.from({ length: 20 }, (_, i) => input(`session.big${i}`, REPO_A, { reason: "x".repeat(100) })));
    await hub.sync();
    const err = await caught(it.next());
    expect(err.reason).toBe("SUBSCRIBER_TOO_SLOW");
  });

  pgAndPrimary("ends a stream promptly when its signal aborts, and unsubscribes", async () => {
    const ac = new AbortController();
    const it = hub.stream({ afterSeq: 0n, filter: {} }, ac.signal)[Symbol.asyncIterator]();
    const pending = it.next();
    await until(() => hub.subscriberCount === 1);
    setTimeout(() => ac.abort(), 20);
    const err = await caught(pending);
    expect(err.kind).toBe("cancelled");
    expect(hub.subscriberCount).toBe(0);
  });

  pgAndPrimary("watch() delivers live events of the given sessions only, from the call on (AttachSession notices)", async () => {
    const session = randomUUID();
    await writeEvents(registry, [input("session.created", REPO_A, { sessionId: session })]);
    await hub.sync();
    const ac = new AbortController();
    const live = hub.watch({ sessionIds: [session] }, ac.signal);
    await writeEvents(registry, [input("session.stranded", REPO_A), input("session.stranded", REPO_A, { sessionId: session })]);
    await writeEvents(registry, [input("session.resumed", REPO_A, { sessionId: session })]);
    const got: Event[] = [];
    for await (const e of live) {
      got.push(e);
      if (got.length === 2) break;
    }
    expect(got.map((e) => e.kind)).toEqual(["session.stranded", "session.resumed"]);
    expect(got.every((e) => e.sessionId === session)).toBe(true);
    expect(hub.subscriberCount).toBe(0);
  });

  it("after pruning, after_seq older than the oldest retained event is OUT_OF_RANGE with oldest_seq", async () => {
    const day = 86_400_000;
    const now = Date.now();
    await writeEvents(registry, [input("session.old1", REPO_A, { occurredAt: now - 3 * day }), input("session.old2", REPO_A, { occurredAt: now - 2 * day })]);
    await writeEvents(registry, [input("session.new", REPO_A, { occurredAt: now })]);
    // An old event after a young one is kept: pruning deletes a prefix only.
    await writeEvents(registry, [input("session.late_old", REPO_A, { occurredAt: now - 3 * day })]);
    const seqs = await storedSeqs(database.opened.db);
    const pruner = new EventPruner({ db: database.opened.db, clock: { now: () => now }, logger: silent, retentionSeconds: 86_400, chunkSize: 1 });
    expect(await pruner.pruneOnce()).toBe(2);
    expect(await storedSeqs(database.opened.db)).toEqual(seqs.slice(2));

    for (const after of [1n, seqs[0]!]) {
      const e2 = await caught(hub.assertRetained(after));
      expect(e2.kind).toBe("out_of_range");
      expect(e2.reason).toBe("EVENTS_PRUNED");
      expect(e2.metadata.oldest_seq).toBe(seqs[2]!.toString());
    }
    // The stream itself answers OUT_OF_RANGE before delivering anything.
    const it = hub.stream({ afterSeq: seqs[0]!, filter: {} }, new AbortController().signal)[Symbol.asyncIterator]();
    expect((await caught(it.next())).kind).toBe("out_of_range");
    // after_seq = 0 (everything retained) and after_seq = oldest-1 work.
    expect((await take(hub, 0n, 2)).map((e) => e.kind)).toEqual(["session.new", "session.late_old"]);
    expect((await take(hub, seqs[1]!, 2)).map((e) => e.seq)).toEqual(seqs.slice(2));
  });

  pgAndPrimary("pruning never deletes events the NATS relay has not published", async () => {
    const now = Date.now();
    for (let i = 0; i < 5; i++) await writeEvents(registry, [input(`session.old${i}`, REPO_A, { occurredAt: now - 10 * 86_400_000 })]);
    const seqs = await storedSeqs(database.opened.db);
    const db = database.opened.db;
    expect(await readRelayCursor(db, "S")).toBe(0n);
    const pruner = new EventPruner({ db, clock: { now: () => now }, logger: silent, retentionSeconds: 86_400, relayStream: "S", chunkSize: 2 });
    expect(await pruner.pruneOnce()).toBe(0);
    expect(await advanceRelayCursor(db, "S", 0n, seqs[2]!)).toBe(true);
    expect(await pruner.pruneOnce()).toBe(3);
    expect(await storedSeqs(db)).toEqual(seqs.slice(3));
  });

  pgAndPrimary("fans out to 1,000 concurrent subscribers", async () => {
    const acs: AbortController[] = [];
    const counts = new Array<number>(1000).fill(0);
    const N = 200;
    const done: Promise<void>[] = [];
    for (let i = 0; i < 1000; i++) {
      const ac = new AbortController();
      acs.push(ac);
      const filter: EventFilter = i % 4 === 0 ? {} : i % 4 === 1 ? { kinds: ["session.*"] } : i % 4 === 2 ? { repoIds: [REPO_A, REPO_B] } : { kinds: ["*.created"] };
      done.push(
        (async () => {
          for await (const _ of hub.stream({ afterSeq: 0n, filter }, ac.signal)) {
            void _;
            if (++counts[i]! === N) return;
          }
        })(),
      );
    }
    await until(() => hub.subscriberCount === 1000);
    const t0 = performance.now();
    for (let i = 0; i < N / 4; i++) await writeEvents(registry, Array.from({ length: 4 }, () => input("session.created", i % 2 ? REPO_A : REPO_B)));
    await Promise.all(done);
    const ms = performance.now() - t0;
    console.log(`[measure] ${kind}: ${N} events (${N / 4} transactions) to 1,000 subscribers = ${N * 1000} deliveries in ${ms.toFixed(0)} ms`);
    expect(counts.every((c) => c === N)).toBe(true);
    for (const ac of acs) ac.abort();
  }, 60_000);
});
