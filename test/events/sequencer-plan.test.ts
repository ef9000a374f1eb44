/**
 * A sequencer pass reads the unnumbered rows, not the outbox, nor what earlier passes numbered:
 * after 20,000 rows were numbered by passes (each leaving a dead `seq IS NULL` entry in
 * events_seq_key until VACUUM), with the pass's statement prepared (as every hot statement on
 * PostgreSQL is, platform/prepared-statements.ts) and run often enough for a generic plan, a
 * pass still reads about as many rows as it numbers. (A bitmap scan re-read every dead entry on
 * every pass; with its LIMIT a parameter, the generic plan could walk events_pkey from the
 * oldest row.)
 */
import pg from "pg";
import { sql } from "kysely";
import { afterEach, beforeEach, expect, it } from "vitest";
import { sequencePending } from "../../src/delivery/sequencer.js";
import { openDatabase, type OpenedDatabase } from "../../src/platform/database.js";
import { insertEvents, prepareEvent } from "../../src/platform/outbox.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { input, REPO_A, until } from "./helpers.js";

const NUMBERED = 20_000;
const PASSES = 12;

needs({ postgres: true })("a sequencer pass on a large outbox", () => {
  let database: TestDatabase;
  let one: OpenedDatabase;
  let stats: pg.Client;

  beforeEach(async () => {
    database = await createTestDatabase("postgres");
    // One pooled connection, with the pool's prepared statements: every pass runs the same named statement.
    one = await openDatabase({ url: database.url, dataDir: "unused", poolMax: 1 });
    stats = new pg.Client({ connectionString: database.url });
    await stats.connect();
  }, 60_000);
  afterEach(async () => {
    await stats.end();
    await one.close();
    await database.drop();
  });

  /** Index and sequential tuples read from events, and index scans of it, as the cumulative statistics have them. */
  async function eventReads(): Promise<{ tuples: number; scans: number }> {
    const r = await stats.query<{ tuples: string; scans: string }>(
      `SELECT coalesce(sum(idx_tup_read), 0) + (SELECT seq_tup_read FROM pg_stat_user_tables WHERE relname = 'events') AS tuples,
              coalesce(sum(idx_scan), 0) + (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'events') AS scans
       FROM pg_stat_user_indexes WHERE relname = 'events'`,
    );
    return { tuples: Number(r.rows[0]!.tuples), scans: Number(r.rows[0]!.scans) };
  }

  it(`numbers one new row per pass reading a few rows, not the ${NUMBERED.toLocaleString("en-US")} numbered before it, once its statement is prepared and generic`, async () => {
    const db = database.opened.db;
    const row = prepareEvent(input("test.old", REPO_A)).row;
    await sql`INSERT INTO events (id, kind, repo_id, occurred_at, reason, payload)
      SELECT gen_random_uuid(), 'test.old', ${REPO_A}::uuid, now(), '', ${row.payload}::bytea FROM generate_series(1, ${NUMBERED})`.execute(db);
    // Statistics taken while every row was unnumbered (as after a startup reconcile's burst): the planner expects many.
    await sql`ANALYZE events`.execute(db);
    expect(await sequencePending(one.db)).toBe(BigInt(NUMBERED));
    // Past the pool's naming threshold and PostgreSQL's five custom plans, so the later passes run the generic plan.
    for (let i = 0; i < 8; i++) {
      await insertEvents([prepareEvent(input("test.warm", REPO_A)).row]).execute(db);
      await sequencePending(one.db);
    }
    await sql`SELECT pg_stat_force_next_flush()`.execute(one.db);
    await until(async () => (await eventReads()).scans > 0, 15_000, "the passes' statistics");
    const before = await eventReads();
    for (let i = 0; i < PASSES; i++) {
      await insertEvents([prepareEvent(input("test.new", REPO_A)).row]).execute(db);
      expect(await sequencePending(one.db)).toBe(BigInt(NUMBERED + 8 + i + 1));
    }
    await sql`SELECT pg_stat_force_next_flush()`.execute(one.db);
    await until(async () => (await eventReads()).scans >= before.scans + PASSES, 15_000, "the passes' statistics");
    const after = await eventReads();
    // Each pass finds its row (and what earlier passes left dead in the seq index) and updates it: a few dozen tuples, never the outbox.
    expect((after.tuples - before.tuples) / PASSES).toBeLessThan(200);
  });
});
