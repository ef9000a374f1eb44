import { sql, type Kysely } from "kysely";

/**
 * A changeset's history (issue 29): changeset_transitions holds one row per state change, written
 * in the transaction that makes it (src/sessions/changesets.ts, recordMoves), so the history
 * never lacks a state the changeset was in nor lists one it never reached. Keyed by the
 * changeset's version after the move (migrations/0018): the database's own order of its states,
 * not the clock of the instance that moved it. `who` is the calling agent, "anonymous" (auth
 * off) or "berth" (the server's own moves). Changesets moved before this migration have no
 * history rows; nothing is invented for them.
 *
 * changesets.merged_into: the branch a MERGED transition merged it into (a full ref); NULL
 * otherwise. The changeset.merged event says it too, but events are pruned.
 *
 * changesets_repo_created: ListChangesets' order (newest first) within a repository.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE changeset_transitions (
      changeset_id uuid NOT NULL REFERENCES changesets(id) ON DELETE CASCADE,
      version bigint NOT NULL,
      from_state text NOT NULL,
      to_state text NOT NULL,
      reason text NOT NULL,
      who text NOT NULL,
      at timestamptz NOT NULL,
      PRIMARY KEY (changeset_id, version)
    )`.execute(db);
  await sql`ALTER TABLE changesets ADD COLUMN merged_into text`.execute(db);
  await sql`CREATE INDEX changesets_repo_created ON changesets (repo_id, created_at DESC, id DESC)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS changesets_repo_created`.execute(db);
  await sql`ALTER TABLE changesets DROP COLUMN IF EXISTS merged_into`.execute(db);
  await sql`DROP TABLE IF EXISTS changeset_transitions`.execute(db);
}
