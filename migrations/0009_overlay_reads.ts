import { sql, type Kysely } from "kysely";

/**
 * overlay_reads: the last ReadFile of a path by a workspace, where it can matter to
 * STALE_OVERLAY — kept only when another session had touched the path at read time (if nobody
 * had, any competing change is after the read and the read could never excuse it). Shared by
 * every instance, so a ReadFile on one counts for a write on another (docs/overlay.md, "Several
 * instances"). Deleted with the workspace's overlay rows when it ends for good.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE overlay_reads (
      workspace_id uuid NOT NULL REFERENCES workspaces(id),
      path text NOT NULL,
      read_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, path)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS overlay_reads`.execute(db);
}
