import { sql, type Kysely } from "kysely";

/**
 * The session lifecycle (issue 3): which Berth instance owns each active workspace, and the
 * instances themselves, so that a restarted or surviving instance can tell orphaned work
 * (owner dead) from work another live instance still holds. See docs/lifecycle.md.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // One row per process start (an "incarnation"). `name` is stable across restarts of the same
  // instance (host and port), so a restart recognises its previous incarnation at once;
  // heartbeat_at tells everyone else whether an incarnation is still alive.
  await sql`
    CREATE TABLE instances (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      started_at timestamptz NOT NULL,
      heartbeat_at timestamptz NOT NULL,
      stopped_at timestamptz
    )`.execute(db);
  await sql`CREATE INDEX instances_name ON instances (name)`.execute(db);

  // NULL: written before this migration or by a registry without an instance (orphaned at the next start).
  await sql`ALTER TABLE workspaces ADD COLUMN owner_instance uuid`.execute(db);
  await sql`CREATE INDEX workspaces_active_owner ON workspaces (owner_instance) WHERE lifecycle = 'active'`.execute(db);
  await sql`CREATE INDEX workspaces_stranded_at ON workspaces (stranded_at) WHERE lifecycle = 'stranded'`.execute(db);
  await sql`CREATE INDEX session_redirects_new ON session_redirects (new_session_id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP INDEX IF EXISTS session_redirects_new`.execute(db);
  await sql`DROP INDEX IF EXISTS workspaces_stranded_at`.execute(db);
  await sql`DROP INDEX IF EXISTS workspaces_active_owner`.execute(db);
  await sql`ALTER TABLE workspaces DROP COLUMN IF EXISTS owner_instance`.execute(db);
  await sql`DROP TABLE IF EXISTS instances`.execute(db);
}
