import { sql, type Kysely } from "kysely";

/**
 * A repository's check on VERIFYING (issue 29; docs/landing-work.md, "Checks on VERIFYING"): the
 * command an admin gave it (check_argv, NULL: no check) and its timeout, and one `verifications`
 * row per run of it. A row is inserted RUNNING in the transaction that moves the changeset to
 * VERIFYING, by the instance that will run it (instance_id, an incarnation: instances.id), and
 * finished (PASSED, FAILED, ERROR) in the transaction that moves the changeset out of VERIFYING.
 * A RUNNING row whose instance is gone is finished as ERROR by the sweep of any live instance
 * (verifications_running finds them).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories ADD COLUMN check_argv text[]`.execute(db);
  await sql`ALTER TABLE repositories ADD COLUMN check_timeout_seconds integer`.execute(db);
  await sql`CREATE TABLE verifications (
    id uuid PRIMARY KEY,
    changeset_id uuid NOT NULL REFERENCES changesets(id) ON DELETE CASCADE,
    repo_id uuid NOT NULL,
    state text NOT NULL CHECK (state IN ('running', 'passed', 'failed', 'error')),
    argv text[] NOT NULL,
    timeout_seconds integer NOT NULL,
    commit_id text,
    exit_code integer,
    reason text NOT NULL DEFAULT '',
    output_tail text NOT NULL DEFAULT '',
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    instance_id uuid
  )`.execute(db);
  await sql`CREATE INDEX verifications_changeset ON verifications (changeset_id, started_at)`.execute(db);
  await sql`CREATE INDEX verifications_running ON verifications (instance_id) WHERE state = 'running'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS verifications`.execute(db);
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS check_timeout_seconds`.execute(db);
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS check_argv`.execute(db);
}
