import { sql, type Kysely } from "kysely";

/**
 * comments: review comments on a changeset (issue 29), on one of its paths or a line of one
 * (docs/agents.md, "Review comments"). A row is never deleted: resolving sets resolved_by and
 * resolved_at, so a comment the agent never acted on stays listed as open. repo_id is the
 * changeset's, kept on the row for the events and for ResolveIdPrefix's grant check. Listed per
 * changeset oldest first, keyed (created_at, id) like every page of the API.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE comments (
      id uuid PRIMARY KEY,
      changeset_id uuid NOT NULL REFERENCES changesets(id),
      repo_id uuid NOT NULL REFERENCES repositories(id),
      path text NOT NULL DEFAULT '',
      line integer NOT NULL DEFAULT 0 CHECK (line >= 0 AND (line = 0 OR path <> '')),
      body text NOT NULL,
      author text NOT NULL,
      created_at timestamptz NOT NULL,
      resolved_by text,
      resolved_at timestamptz,
      CHECK ((resolved_by IS NULL) = (resolved_at IS NULL))
    )`.execute(db);
  await sql`CREATE INDEX comments_by_changeset ON comments (changeset_id, created_at, id)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS comments`.execute(db);
}
