/**
 * The sequencer shares numbering passes between the callers of one process (the hub and the
 * relay are nudged by the same commit): a caller joins a pass whose statements are not sent
 * yet, and a caller arriving while a pass runs gets a later one, so no caller is ever answered
 * by a pass that could have missed a commit it saw.
 */
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SEQUENCER_LOCK_KEY, sequencePending } from "../../src/delivery/sequencer.js";
import { headSeq } from "../../src/delivery/event-store.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { input, registryOn, until, writeEvents } from "./helpers.js";

needs({ postgres: true })("sequencer passes shared within a process", () => {
  let database: TestDatabase;
  let registry: WorkspaceRegistry;
  let holder: pg.Client;

  beforeEach(async () => {
    database = await createTestDatabase("postgres");
    registry = registryOn(database.opened.db);
    holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
  });
  afterEach(async () => {
    await holder.end();
    await database.drop();
  });

  /** Backends of this database waiting for the sequencer's advisory lock. */
  async function waiters(): Promise<number> {
    const r = await holder.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
       WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`,
    );
    return Number(r.rows[0]!.n);
  }

  it("callers of one turn share one pass; a caller arriving during a pass gets a later one that sees its commit", async () => {
    const db = database.opened.db;
    await writeEvents(registry, [input("session.first")]);
    // Hold the sequencer's lock so the pass stays in flight while the test looks at it.
    await holder.query(`SELECT pg_advisory_lock(${SEQUENCER_LOCK_KEY.toString()}::bigint)`);
    const together = Array.from({ length: 5 }, () => sequencePending(db));
    await until(async () => (await waiters()) >= 1, 10_000, "the pass to wait for the lock");
    // A committed event the blocked pass cannot see (its snapshot is after the lock, but it
    // was called before this commit), and a caller that saw that commit.
    await writeEvents(registry, [input("session.second")]);
    const later = sequencePending(db);
    for (let i = 0; i < 10; i++) expect(await waiters()).toBe(1);
    await holder.query(`SELECT pg_advisory_unlock(${SEQUENCER_LOCK_KEY.toString()}::bigint)`);

    const heads = await Promise.all(together);
    expect(new Set(heads).size).toBe(1);
    expect(heads[0]).toBeGreaterThanOrEqual(1n);
    // The later caller's answer covers the commit it saw.
    expect(await later).toBe(2n);
    expect(await headSeq(db)).toBe(2n);
  });
});
