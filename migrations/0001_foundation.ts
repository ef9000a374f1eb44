import { sql, type Kysely } from "kysely";

/**
 * Repositories, changesets, workspaces, session redirects and the event outbox.
 * Plain SQL: the same statements run on PostgreSQL and on PGlite.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE repositories (
      id uuid PRIMARY KEY,
      name text NOT NULL UNIQUE,
      source_path text,
      -- The last agent-N handed out; bumped under the row lock so names are gap-free and never reused.
      next_agent_number integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL
    )`.execute(db);

  await sql`
    CREATE TABLE changesets (
      id uuid PRIMARY KEY,
      repo_id uuid NOT NULL REFERENCES repositories(id),
      state text NOT NULL CHECK (state IN ('draft','submitted','verifying','approved','rejected','merged','closed')),
      reason text NOT NULL DEFAULT '',
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX changesets_repo ON changesets (repo_id)`.execute(db);

  await sql`
    CREATE TABLE workspaces (
      id uuid PRIMARY KEY,
      session_id uuid NOT NULL UNIQUE,
      repo_id uuid NOT NULL REFERENCES repositories(id),
      agent_id text NOT NULL,
      agent_name text NOT NULL,
      changeset_id uuid NOT NULL REFERENCES changesets(id),
      intent text NOT NULL,
      base_commit text NOT NULL,
      mode text NOT NULL CHECK (mode IN ('ephemeral','persistent')),
      expires_at timestamptz,
      created_at timestamptz NOT NULL,
      last_active_at timestamptz NOT NULL,
      lifecycle text NOT NULL DEFAULT 'active' CHECK (lifecycle IN ('active','stranded','abandoned','destroyed')),
      lifecycle_reason text NOT NULL DEFAULT '',
      stranded_at timestamptz,
      ended_at timestamptz,
      resumed_from uuid
    )`.execute(db);
  await sql`CREATE INDEX workspaces_repo_live ON workspaces (repo_id) WHERE lifecycle IN ('active','stranded')`.execute(db);
  await sql`CREATE INDEX workspaces_lifecycle ON workspaces (lifecycle)`.execute(db);
  await sql`CREATE INDEX workspaces_changeset ON workspaces (changeset_id)`.execute(db);

  // A resumed session's old id keeps answering: it points at the session that replaced it.
  await sql`
    CREATE TABLE session_redirects (
      dead_session_id uuid PRIMARY KEY,
      new_session_id uuid NOT NULL,
      workspace_id uuid NOT NULL REFERENCES workspaces(id),
      created_at timestamptz NOT NULL
    )`.execute(db);

  // The transactional outbox. Writers insert rows with seq NULL (staged gives their insert
  // order); the sequencer (src/delivery/sequencer.ts) numbers committed rows afterwards, one pass
  // at a time, so seq order is the order readers can see, and writers never wait for each other.
  await sql`
    CREATE TABLE events (
      staged bigserial PRIMARY KEY,
      seq bigint UNIQUE,
      id uuid NOT NULL UNIQUE,
      kind text NOT NULL,
      repo_id uuid NOT NULL,
      session_id uuid,
      workspace_id uuid,
      agent_id text,
      changeset_id uuid,
      occurred_at timestamptz NOT NULL,
      reason text NOT NULL DEFAULT '',
      -- A berth.v1.Event holding only its kind-specific payload; every other field is a column.
      payload bytea NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX events_unsequenced ON events (staged) WHERE seq IS NULL`.execute(db);
  await sql`CREATE TABLE outbox_head (id integer PRIMARY KEY CHECK (id = 1), last_seq bigint NOT NULL)`.execute(db);
  await sql`INSERT INTO outbox_head (id, last_seq) VALUES (1, 0)`.execute(db);
  await sql`CREATE INDEX events_occurred ON events (occurred_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ["outbox_head", "events", "session_redirects", "workspaces", "changesets", "repositories"]) {
    await sql`DROP TABLE IF EXISTS ${sql.table(t)}`.execute(db);
  }
}
