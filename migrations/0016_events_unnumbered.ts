import { sql, type Kysely } from "kysely";

/**
 * The sequencer's pass finds the rows it numbers through an index of those rows alone, in the
 * order it numbers them (issue 16, fourth pass; docs/decisions.md "Events: …"). Migration 0014
 * dropped the same index (events_unsequenced) for events_seq_key, which keeps NULLs too; but each
 * numbered row leaves a dead NULL entry there until VACUUM, which the planner's bitmap scans
 * re-read on every pass (1,400 per pass after 12 s of WriteFile, 53,000 after a 20,000-row burst
 * analysed while unnumbered, where the plan became a walk of the whole table). Here the pass walks
 * the unnumbered rows in staged order and stops at its limit, and a plain index scan marks the
 * dead entries it passes, so later passes skip them. The price: one index entry per event insert.
 * Building it reads the whole outbox while event writers wait (a plain CREATE INDEX, as every
 * migration here runs in its transaction); the index itself holds only unnumbered rows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS events_unnumbered ON events (staged) WHERE seq IS NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_unnumbered`.execute(db);
}
