import { sql, type Kysely } from "kysely";

/**
 * Fewer index entries per CreateWorkspace (issue 16), each of which the create wrote and no
 * query read:
 * - workspaces_lifecycle indexed every row by its lifecycle; the reads of active and stranded
 *   rows go through the partial indexes (workspaces_repo_live, workspaces_active_owner,
 *   workspaces_stranded_at), and only the metrics snapshot asks for stranded and abandoned rows
 *   without a repository. It becomes partial on those two states: a new (active) workspace no
 *   longer adds an entry.
 * - changesets_repo: no query selects changesets by repository, and repositories are never
 *   deleted (the only use of an index on the referencing side of changesets.repo_id).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS workspaces_lifecycle`.execute(db);
  await sql`CREATE INDEX workspaces_lifecycle ON workspaces (lifecycle) WHERE lifecycle IN ('stranded','abandoned')`.execute(db);
  await sql`DROP INDEX IF EXISTS changesets_repo`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX IF NOT EXISTS changesets_repo ON changesets (repo_id)`.execute(db);
  await sql`DROP INDEX IF EXISTS workspaces_lifecycle`.execute(db);
  await sql`CREATE INDEX workspaces_lifecycle ON workspaces (lifecycle)`.execute(db);
}
