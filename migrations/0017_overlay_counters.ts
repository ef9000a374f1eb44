import { sql, type Kysely } from "kysely";

/**
 * workspaces.overlay_files_count / overlay_bytes: how many overlay rows a workspace holds and the
 * sum of their content's octet_length, kept by the statements that change the rows (issue 26,
 * item 13; docs/overlay.md "Memory"). The overlay quota was a count and a sum over the whole
 * overlay on every write, under the workspace's row lock; it now reads these two columns of the
 * row the write locks and bumps anyway. Every statement that changes overlay_files rows updates
 * them in the same statement, as it does overlay_version (src/overlay/overlay.repository.ts).
 *
 * The backfill counts every existing overlay once, grouped by workspace (one pass over
 * overlay_files; octet_length of a bytea reads its stored length without detoasting it).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workspaces ADD COLUMN overlay_files_count bigint NOT NULL DEFAULT 0, ADD COLUMN overlay_bytes bigint NOT NULL DEFAULT 0`.execute(db);
  await sql`
    UPDATE workspaces w SET overlay_files_count = s.files, overlay_bytes = s.bytes
    FROM (SELECT workspace_id, count(*) AS files, coalesce(sum(octet_length(content)), 0) AS bytes FROM overlay_files GROUP BY workspace_id) s
    WHERE w.id = s.workspace_id`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE workspaces DROP COLUMN IF EXISTS overlay_bytes, DROP COLUMN IF EXISTS overlay_files_count`.execute(db);
}
