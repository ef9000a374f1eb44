import { sql, type Kysely } from "kysely";

/**
 * The workspace overlay and symbol claims (issue 5; docs/overlay.md).
 *
 * overlay_files: one row per (workspace, path) the session changed: the content (NULL for a
 * deletion tombstone over a base file), its sha256, the change against the base, the base's
 * sha256 (NULL when the base has no such file) and the symbols the session changed in it
 * (cumulative; what DescribeOtherModifiers reports). Keyed by the workspace, not the session,
 * so a resume (which moves the session id) keeps it.
 *
 * claims: one row per (repository, path, qualified symbol), held by one workspace; symbol ''
 * is the file as a whole. The primary key is the lock: two sessions can never hold the same
 * symbol, on any number of instances.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE overlay_files (
      workspace_id uuid NOT NULL REFERENCES workspaces(id),
      path text NOT NULL,
      repo_id uuid NOT NULL,
      content bytea,
      sha256 text,
      change text NOT NULL CHECK (change IN ('added','modified','deleted')),
      base_hash text,
      symbols text[] NOT NULL DEFAULT '{}',
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, path),
      CHECK ((content IS NULL) = (change = 'deleted'))
    )`.execute(db);
  // Who else touched a path (DescribeOtherModifiers, STALE_OVERLAY, the index rebuilt per repository).
  await sql`CREATE INDEX overlay_files_repo_path ON overlay_files (repo_id, path)`.execute(db);

  await sql`
    CREATE TABLE claims (
      repo_id uuid NOT NULL,
      path text NOT NULL,
      symbol text NOT NULL,
      workspace_id uuid NOT NULL REFERENCES workspaces(id),
      session_id uuid NOT NULL,
      agent_id text NOT NULL,
      agent_name text NOT NULL,
      acquired_at timestamptz NOT NULL,
      PRIMARY KEY (repo_id, path, symbol)
    )`.execute(db);
  await sql`CREATE INDEX claims_workspace ON claims (workspace_id)`.execute(db);

  // The guarantee of issue 3 (defect 5): a workspace that stops being active holds no claim,
  // whichever statement moved it (strand, abandon, destroy, GC, the set-based startup
  // reconcile). Statement-level with a transition table: one set-based DELETE per UPDATE.
  // The explicit paths release first and report claim.released; this catches the rest.
  await sql`
    CREATE FUNCTION release_claims_of_inactive() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM claims c USING changed_rows n WHERE c.workspace_id = n.id AND n.lifecycle <> 'active';
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER workspaces_release_claims AFTER UPDATE ON workspaces
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION release_claims_of_inactive()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS workspaces_release_claims ON workspaces`.execute(db);
  await sql`DROP FUNCTION IF EXISTS release_claims_of_inactive()`.execute(db);
  await sql`DROP TABLE IF EXISTS claims`.execute(db);
  await sql`DROP TABLE IF EXISTS overlay_files`.execute(db);
}
