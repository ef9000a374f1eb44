import { sql, type Kysely } from "kysely";

/**
 * Turns on several instances (issue "Scale-out"; docs/turns.md, "Several instances").
 *
 * - turns_one_running: at most one RUNNING turn per workspace (a session's workspace id is stable
 *   across resume), enforced by PostgreSQL whichever instance inserts it. Before it is created,
 *   any workspace that already has several RUNNING turns (the bug this fixes) keeps only its
 *   newest; the others become ENDED/FAILED with end_reason duplicate_running (no event: a
 *   migration does not write the outbox).
 * - turns_workspace: the newest turn of a workspace (who holds its environment).
 * - turns.environment_released: the instance that ran the turn no longer holds the workspace's
 *   environment (it tore it down with no turn after it); set on that instance's turn rows.
 * - instances.advertise_addr: the internal gRPC address other instances forward turn RPCs to
 *   (BERTH_ADVERTISE_ADDR). NULL: an instance that cannot be forwarded to.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    UPDATE turns SET state = 'ended', outcome = 'failed', end_reason = 'duplicate_running', ended_at = now()
    WHERE state = 'running' AND id NOT IN (
      SELECT DISTINCT ON (workspace_id) id FROM turns WHERE state = 'running' ORDER BY workspace_id, seq DESC)`.execute(db);
  await sql`CREATE UNIQUE INDEX turns_one_running ON turns (workspace_id) WHERE state = 'running'`.execute(db);
  await sql`CREATE INDEX turns_workspace ON turns (workspace_id, seq DESC)`.execute(db);
  await sql`ALTER TABLE turns ADD COLUMN environment_released boolean NOT NULL DEFAULT false`.execute(db);
  await sql`ALTER TABLE instances ADD COLUMN advertise_addr text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE instances DROP COLUMN IF EXISTS advertise_addr`.execute(db);
  await sql`ALTER TABLE turns DROP COLUMN IF EXISTS environment_released`.execute(db);
  await sql`DROP INDEX IF EXISTS turns_workspace`.execute(db);
  await sql`DROP INDEX IF EXISTS turns_one_running`.execute(db);
}
