import { sql, type Kysely } from "kysely";

/**
 * changesets.version: a counter of the changeset's state changes, bumped by the statement that
 * makes each of them (`version = version + 1`). Instances cache a changeset's state and order what
 * they hear of it by this number, which PostgreSQL assigns under the row's lock, and not by
 * updated_at, which each instance stamps with its own clock (docs/lifecycle.md, "Changeset state
 * on several instances"). ADD COLUMN with a constant default rewrites nothing (PostgreSQL 11+).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE changesets ADD COLUMN version bigint NOT NULL DEFAULT 0`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE changesets DROP COLUMN IF EXISTS version`.execute(db);
}
