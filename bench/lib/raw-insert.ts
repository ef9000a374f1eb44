/**
 * The durable-write baseline of the rows: raw `pg` BEGIN; INSERT of one 13-column row
 * (the width of a workspace row); COMMIT, from the load generator's pg workers with a pool the size
 * of Berth's (src/platform/database.ts, pg.Pool max 16). The load generator binds $1 and $2 to
 * fresh UUIDs and $3 to a short text.
 */
import type { BenchDatabase } from "./database.js";

export const RAW_INSERT_POOL = 16;
export const RAW_INSERT_IN_FLIGHT = 64;

export const RAW_INSERT =
  "INSERT INTO bench_row13 (id, session_id, repo_id, changeset_id, agent_id, agent_name, intent, base_commit, mode, lifecycle, payload, created_at, updated_at) " +
  "VALUES ($1, $2, $1, $2, 'bench-agent', 'writer', $3, 'main', 'ephemeral', 'active', $3, now(), now())";

export async function createRawInsertTable(db: BenchDatabase): Promise<void> {
  await db.query(`CREATE TABLE bench_row13 (
    id uuid PRIMARY KEY, session_id uuid NOT NULL UNIQUE, repo_id uuid NOT NULL, changeset_id uuid NOT NULL,
    agent_id text NOT NULL, agent_name text NOT NULL, intent text NOT NULL, base_commit text NOT NULL, mode text NOT NULL,
    lifecycle text NOT NULL, payload text NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL)`);
}

/** The load spec of the baseline (runLoad's pg kind). */
export function rawInsertLoad(db: BenchDatabase) {
  return { kind: "pg" as const, pgUrl: db.url, pgPoolMax: RAW_INSERT_POOL, concurrency: RAW_INSERT_IN_FLIGHT, pgStatements: [RAW_INSERT] };
}
