import { sql, type Kysely } from "kysely";

/**
 * Client-chosen request ids, so that a retry of a create that succeeded (its answer lost) gets the
 * resource instead of ALREADY_EXISTS:
 * - repositories.request_id: RegisterRepository's `request_id`;
 * - workspaces.create_request_id: CreateWorkspace's `request_id`, unique per (repository, agent),
 *   so two concurrent retries create one workspace.
 * NULL when the call gave none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories ADD COLUMN request_id text`.execute(db);
  await sql`ALTER TABLE workspaces ADD COLUMN create_request_id text`.execute(db);
  await sql`CREATE UNIQUE INDEX workspaces_create_request ON workspaces (repo_id, agent_id, create_request_id) WHERE create_request_id IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS workspaces_create_request`.execute(db);
  await sql`ALTER TABLE workspaces DROP COLUMN IF EXISTS create_request_id`.execute(db);
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS request_id`.execute(db);
}
