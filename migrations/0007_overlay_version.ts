import { sql, type Kysely } from "kysely";

/**
 * workspaces.overlay_version: a counter of the workspace's overlay changes. Every statement that
 * changes overlay_files rows bumps it in the same statement (src/overlay/overlay.repository.ts),
 * so an instance's cache of a workspace's overlay is current exactly when its version equals the
 * row's: every read and write compares them with one primary-key lookup and reloads the cache
 * when another instance changed the overlay meanwhile (docs/overlay.md, "Several instances").
 * ADD COLUMN with a constant default rewrites nothing (PostgreSQL 11+).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workspaces ADD COLUMN overlay_version bigint NOT NULL DEFAULT 0`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workspaces DROP COLUMN IF EXISTS overlay_version`.execute(db);
}
