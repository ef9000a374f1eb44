/**
 * Fresh, migrated databases for tests: a new PostgreSQL database per call (dropped afterwards),
 * or an in-memory PGlite. Each test file gets its own, so files run in parallel.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase, type OpenedDatabase } from "../../src/platform/database.js";
import { migrateToLatest } from "../../src/platform/migrate.js";
import { POSTGRES_URL, postgresAvailable } from "./services.js";

export type DatabaseKind = "postgres" | "pglite";

/** The kinds this machine can test: both where PostgreSQL runs, PGlite alone elsewhere. */
export const DATABASE_KINDS: readonly DatabaseKind[] = postgresAvailable ? ["postgres", "pglite"] : ["pglite"];

/** The kind end-to-end tests use: real PostgreSQL where it runs. */
export const PRIMARY_KIND: DatabaseKind = postgresAvailable ? "postgres" : "pglite";

export interface TestDatabase {
  readonly kind: DatabaseKind;
  /** Connection URL (postgres only): lets a second server or process open the same database. */
  readonly url: string | undefined;
  /** Opens another connection (pool) to the same database; the caller closes it. */
  reopen(): Promise<OpenedDatabase>;
  readonly opened: OpenedDatabase;
  drop(): Promise<void>;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function createTestDatabase(kind: DatabaseKind = PRIMARY_KIND, options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const migrate = options.migrate ?? true;
  if (kind === "pglite") {
    const opened = await openDatabase({ url: undefined, dataDir: "memory://" });
    if (migrate) await migrateToLatest(opened.db);
    return {
      kind,
      url: undefined,
      opened,
      reopen: () => Promise.reject(new Error("an in-memory PGlite database has one connection; share `opened`, or gate the test with needs({ postgres: true })")),
      drop: () => opened.close(),
    };
  }
  const name = `berth_test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  const dbUrl = url.toString();
  const opened = await openDatabase({ url: dbUrl, dataDir: "unused" });
  if (migrate) await migrateToLatest(opened.db);
  return {
    kind,
    url: dbUrl,
    opened,
    reopen: () => openDatabase({ url: dbUrl, dataDir: "unused" }),
    async drop() {
      await opened.close();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
