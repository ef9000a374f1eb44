import { sql, type Kysely } from "kysely";

/**
 * Turns (issue 6): one row per BeginTurn that started, so ListTurns and EndTurn are meaningful
 * after a restart. A turn RUNNING when its server stopped is marked ENDED/FAILED (end_reason
 * server_restart) by the next start (docs/turns.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE turns (
      id uuid PRIMARY KEY,
      -- Insertion order: ties of started_at (an injected clock, one millisecond) list newest first.
      seq bigserial NOT NULL,
      session_id uuid NOT NULL,
      workspace_id uuid NOT NULL,
      repo_id uuid NOT NULL,
      client_turn_id text,
      -- running, ended, superseded, cancelled
      state text NOT NULL CHECK (state IN ('running', 'ended', 'superseded', 'cancelled')),
      -- completed, awaiting_approval, failed (ended only)
      outcome text CHECK (outcome IN ('completed', 'awaiting_approval', 'failed')),
      environment_path text NOT NULL,
      warm boolean NOT NULL,
      superseded_by uuid,
      end_reason text NOT NULL DEFAULT '',
      -- The incarnation (registry instance id) that ran it.
      instance_id uuid,
      started_at timestamptz NOT NULL,
      ended_at timestamptz
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX turns_client_id ON turns (session_id, client_turn_id) WHERE client_turn_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX turns_session ON turns (session_id, started_at DESC, seq DESC)`.execute(db);
  await sql`CREATE INDEX turns_running ON turns (instance_id) WHERE state = 'running'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE IF EXISTS turns`.execute(db);
}
