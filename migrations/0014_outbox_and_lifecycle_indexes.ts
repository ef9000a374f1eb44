import { sql, type Kysely } from "kysely";

/**
 * Indexes that every event and every lifecycle change paid for and no query needed (issue 16,
 * the 100,000-orphan startup reconcile; EXPLAIN (ANALYZE, BUFFERS, WAL) in docs/decisions.md):
 * - events_occurred: its one reader (the metrics snapshot's newest event) reads the head seq's
 *   row instead; pruning walks seq.
 * - events_unsequenced: `seq IS NULL` is served by events_seq_key (a btree keeps NULLs), which
 *   the sequencer's planner chose anyway.
 * - workspaces_lifecycle, over every row: active rows have workspaces_active_owner, stranded ones
 *   workspaces_stranded_at; only ended rows (abandoned, destroyed) need one, and a strand, the
 *   bulk of a reconcile, then no longer writes an entry for it.
 * An UPDATE that changes lifecycle is never HOT, so each index costs an entry per changed row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS events_occurred`.execute(db);
  await sql`DROP INDEX IF EXISTS events_unsequenced`.execute(db);
  await sql`CREATE INDEX workspaces_ended ON workspaces (lifecycle) WHERE lifecycle IN ('abandoned','destroyed')`.execute(db);
  await sql`DROP INDEX IF EXISTS workspaces_lifecycle`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX workspaces_lifecycle ON workspaces (lifecycle)`.execute(db);
  await sql`DROP INDEX IF EXISTS workspaces_ended`.execute(db);
  await sql`CREATE INDEX events_unsequenced ON events (staged) WHERE seq IS NULL`.execute(db);
  await sql`CREATE INDEX events_occurred ON events (occurred_at)`.execute(db);
}
