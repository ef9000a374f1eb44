/** A fresh PostgreSQL database per scenario (like test/support/database.ts), dropped afterwards. */
import { randomBytes } from "node:crypto";
import pg from "pg";

/** The PostgreSQL server the bench creates its databases on (trust auth on loopback). */
export const ADMIN_URL = process.env.BENCH_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres";

export interface BenchDatabase {
  readonly name: string;
  readonly url: string;
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  drop(): Promise<void>;
}

const live = new Set<BenchDatabase>();

async function admin<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `berth_bench_${randomBytes(5).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  const url = u.toString();
  const db: BenchDatabase = {
    name,
    url,
    async query(text, values) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return await c.query(text, values);
      } finally {
        await c.end();
      }
    },
    async drop() {
      live.delete(db);
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
  live.add(db);
  return db;
}

/** Drops whatever is still open (Ctrl-C, a failed scenario). */
export async function dropAllBenchDatabases(): Promise<void> {
  for (const db of [...live]) await db.drop().catch(() => {});
}

/**
 * The raw-insert baseline of the durable-write scenarios: a 13-column row shaped like a
 * workspace (two uuid keys, one unique; texts, timestamps, a nullable uuid), one per
 * BEGIN/INSERT/COMMIT. $1 and $2 get fresh UUIDs, $3 a short text (bench/loadgen/worker.ts).
 */
export const RAW_INSERT_BASELINE = {
  table: `CREATE TABLE bench_insert (
    id uuid PRIMARY KEY, session_id uuid NOT NULL UNIQUE, repo_id uuid NOT NULL, agent_id text NOT NULL, agent_name text NOT NULL,
    changeset_id uuid NOT NULL, intent text NOT NULL, base_commit text NOT NULL, mode text NOT NULL, expires_at timestamptz,
    created_at timestamptz NOT NULL, last_active_at timestamptz NOT NULL, owner_instance uuid)`,
  insert: `INSERT INTO bench_insert (id, session_id, repo_id, agent_id, agent_name, changeset_id, intent, base_commit, mode, expires_at, created_at, last_active_at, owner_instance)
    VALUES ($1, $2, $1, 'bench-agent', 'agent-1', $2, $3, 'main', 'ephemeral', NULL, now(), now(), NULL)`,
} as const;
