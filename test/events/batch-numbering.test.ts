/**
 * A group-committed CreateWorkspace batch numbers its own session.created events in the
 * statement that inserts them (platform/outbox.ts numberedEvents), beside writers whose
 * rows the sequencer's passes number. The rules pinned here: a reader of `seq > last` never skips
 * or reorders an event whoever numbered it; an event committed before a batch began is numbered
 * below the batch's (causal order); the batch notifies listeners itself.
 */
import pg from "pg";
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sequencePending } from "../../src/delivery/sequencer.js";
import { headSeq, readEvents } from "../../src/delivery/event-store.js";
import { EVENTS_CHANNEL } from "../../src/platform/outbox.js";
import type { Db } from "../../src/platform/database.js";
import type { CreateWorkspaceInput, WorkspaceRegistry } from "../../src/sessions/registry.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { input, registryOn, until, writeEvents } from "./helpers.js";

function create(repoId: string, agentId: string): CreateWorkspaceInput {
  return { repoId, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId, agentName: undefined, sessionId: undefined, changesetId: undefined };
}

async function createdEventSeq(db: Db, sessionId: string): Promise<bigint | null> {
  const r = await sql<{ seq: string | null }>`SELECT seq FROM events WHERE session_id = ${sessionId}::uuid AND kind = 'session.created'`.execute(db);
  return r.rows[0]!.seq === null ? null : BigInt(r.rows[0]!.seq);
}

describe.each(DATABASE_KINDS)("events numbered by the create batch on %s", (kind) => {
  let database: TestDatabase;
  let registry: WorkspaceRegistry;
  const nudges: boolean[] = [];

  beforeEach(async () => {
    database = await createTestDatabase(kind);
    nudges.length = 0;
    registry = registryOn(database.opened.db, (numbered) => nudges.push(numbered !== undefined));
  });
  afterEach(async () => {
    await database.drop();
  });

  it("numbers a batch's events in its statement, contiguously in the batch's order, without a sequencer pass", async () => {
    const db = database.opened.db;
    const repo = await registry.registerRepository("numbered", {});
    await sequencePending(db);
    const before = await headSeq(db);
    nudges.length = 0;
    const created = await Promise.all(Array.from({ length: 20 }, (_, i) => registry.createWorkspace(create(repo.id, `a${i}`))));

    // No pass has run since: the events are numbered already, and delivery was told a read suffices.
    const seqs = await Promise.all(created.map((w) => createdEventSeq(db, w.sessionId)));
    expect(seqs.every((s) => s !== null)).toBe(true);
    expect(nudges.length).toBeGreaterThan(0);
    expect(nudges.every((n) => n)).toBe(true);
    const sorted = (seqs as bigint[]).slice().sort((a, b) => (a < b ? -1 : 1));
    expect(sorted).toEqual(Array.from({ length: 20 }, (_, i) => before + BigInt(i + 1)));
    expect(await headSeq(db)).toBe(before + 20n);
    // Within the repository, agent numbers (the batch's order) follow seq order.
    const byName = created.slice().sort((a, b) => Number(a.agentName.slice(6)) - Number(b.agentName.slice(6)));
    const inOrder = await Promise.all(byName.map((w) => createdEventSeq(db, w.sessionId)));
    expect(inOrder).toEqual(sorted);
    // The sequencer finds nothing left.
    expect(await sequencePending(db)).toBe(before + 20n);
  });

  it("numbers a batch after an event committed before it and not yet numbered (causal order)", async () => {
    const db = database.opened.db;
    const repo = await registry.registerRepository("causal", {});
    await sequencePending(db);
    // Committed, left for a pass (no delivery runs here): the create that follows must come after it.
    const earlier = input("session.earlier", repo.id);
    await writeEvents(registry, [earlier]);
    nudges.length = 0;
    const ws = await registry.createWorkspace(create(repo.id, "late"));
    expect(await createdEventSeq(db, ws.sessionId)).toBeNull();
    expect(nudges).toEqual([false]);

    await sequencePending(db);
    const createdSeq = await createdEventSeq(db, ws.sessionId);
    const earlierSeq = await sql<{ seq: string }>`SELECT seq FROM events WHERE session_id = ${earlier.sessionId!}::uuid`.execute(db);
    expect(createdSeq!).toBeGreaterThan(BigInt(earlierSeq.rows[0]!.seq));

    // Once nothing waits, batches number themselves again.
    const next = await registry.createWorkspace(create(repo.id, "next"));
    expect(await createdEventSeq(db, next.sessionId)).toBe(createdSeq! + 1n);
  });
});

needs({ postgres: true })("batch numbering beside sequencer passes (postgres)", () => {
  let database: TestDatabase;
  let listener: pg.Client;

  beforeEach(async () => {
    database = await createTestDatabase("postgres");
    listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
  });
  afterEach(async () => {
    await listener.end();
    await database.drop();
  });

  it("sends NOTIFY with the head from the batch's own statement", async () => {
    const registry = registryOn(database.opened.db);
    const repo = await registry.registerRepository("notify", {});
    await sequencePending(database.opened.db);
    const heard: string[] = [];
    listener.on("notification", (n) => {
      if (n.channel === EVENTS_CHANNEL && n.payload) heard.push(n.payload);
    });
    await listener.query(`LISTEN ${EVENTS_CHANNEL}`);
    await registry.createWorkspace(create(repo.id, "n"));
    const head = await headSeq(database.opened.db);
    await until(() => heard.includes(head.toString()), 10_000, "the batch's notification");
  });

  it("a reader of seq > last sees every event once, in order, while batches and pass-numbered writers interleave", async () => {
    const second = await database.reopen();
    try {
      const writerA = registryOn(database.opened.db);
      const writerB = registryOn(second.db);
      const repo = await writerA.registerRepository("interleaved", {});
      const db = database.opened.db;
      let writing = true;

      // Each loop writes one change after another: a later one must be numbered above an earlier one.
      const commitOrder: string[][] = [];
      async function loop(registry: WorkspaceRegistry, name: string, n: number): Promise<void> {
        const mine: string[] = [];
        commitOrder.push(mine);
        for (let i = 0; i < n; i++) {
          if (i % 3 === 2) {
            const e = input("test.unnumbered", repo.id);
            await writeEvents(registry, [e]);
            mine.push(e.sessionId!);
          } else {
            const ws = await registry.createWorkspace(create(repo.id, `${name}-${i}`));
            mine.push(ws.sessionId);
          }
        }
      }
      // Passes run all along, on both pools, as hubs and relays of two instances would.
      const passes = (async () => {
        while (writing) await Promise.all([sequencePending(db), sequencePending(second.db)]);
      })();
      const seen: bigint[] = [];
      const seenSessions: string[] = [];
      let last = 0n;
      const reader = (async () => {
        for (;;) {
          const done = !writing;
          const batch = await readEvents(db, last, 1000);
          for (const e of batch) {
            seen.push(e.seq);
            seenSessions.push(e.event.sessionId);
            last = e.seq;
          }
          if (done && batch.length === 0) return;
        }
      })();
      const loops = [
        ...Array.from({ length: 6 }, (_, i) => loop(writerA, `a${i}`, 30)),
        ...Array.from({ length: 6 }, (_, i) => loop(writerB, `b${i}`, 30)),
      ];
      await Promise.all(loops);
      await sequencePending(db);
      writing = false;
      await passes;
      await sequencePending(db);
      await reader;

      const stored = await readEvents(db, 0n, 100_000);
      // Nothing skipped, nothing twice, in seq order: what the reader saw is what is stored.
      expect(seen).toEqual(stored.map((e) => e.seq));
      expect(stored.filter((e) => e.event.repoId === repo.id)).toHaveLength(12 * 30);
      // Causal order within each loop.
      const seqOf = new Map(stored.map((e) => [e.event.sessionId, e.seq]));
      for (const mine of commitOrder) {
        const seqs = mine.map((s) => seqOf.get(s)!);
        for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
      }
      expect(new Set(seenSessions).size).toBe(seenSessions.length);
    } finally {
      await second.close();
    }
  }, 120_000);
});
