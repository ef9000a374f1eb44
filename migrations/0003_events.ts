import { sql, type Kysely } from "kysely";

/**
 * Event delivery state (issue 4): the NATS relay's cursor per stream, and how far retention
 * pruning has deleted the outbox (so WatchEvents can answer OUT_OF_RANGE precisely).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE relay_cursor (
      -- The JetStream stream the cursor belongs to.
      stream text PRIMARY KEY,
      -- Every event with seq <= last_seq has been acknowledged by JetStream.
      last_seq bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`
    CREATE TABLE event_retention (
      id smallint PRIMARY KEY CHECK (id = 1),
      -- Events with seq <= pruned_through have been deleted (pruning deletes a prefix).
      pruned_through bigint NOT NULL DEFAULT 0
    )`.execute(db);
  await sql`INSERT INTO event_retention (id, pruned_through) VALUES (1, 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS event_retention`.execute(db);
  await sql`DROP TABLE IF EXISTS relay_cursor`.execute(db);
}
