/**
 * Opens the database: PostgreSQL through `pg` when a URL is given, otherwise the embedded
 * PGlite under the data directory. Both go through Kysely with the same migrations and queries.
 */
import { mkdir } from "node:fs/promises";
import { availableParallelism } from "node:os";
import path from "node:path";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import { hasCluster, seedFromTemplate } from "./pglite-template.js";
import { preparePoolStatements } from "./prepared-statements.js";
import type { Database } from "./schema.js";

export type Db = Kysely<Database>;

/** Rows of each statement of a multi-statement query, in order. */
export type SimpleQuery = (text: string) => Promise<Record<string, unknown>[][]>;
const simpleQueries = new WeakMap<Db, SimpleQuery>();

/**
 * Runs several statements without parameters in one round trip, as one implicit transaction
 * (PostgreSQL's simple query protocol: each statement still takes its own snapshot), on a pooled
 * connection of `db`. Undefined on PGlite, where a round trip costs nothing to save.
 */
export function simpleQueryOf(db: Db): SimpleQuery | undefined {
  return simpleQueries.get(db);
}

export interface OpenedDatabase {
  readonly db: Db;
  readonly kind: "postgres" | "pglite";
  /** Where the data is, for the log: a URL without password, or a directory. */
  readonly location: string;
  /**
   * The PostgreSQL connection string, for a dedicated connection beside the pool (the event
   * hub's LISTEN); undefined on PGlite. It may hold a password: log `location`, never this.
   */
  readonly url: string | undefined;
  /** PGlite: this open created the data directory from migrations/template/ (no initdb). */
  readonly seededFromTemplate?: boolean;
  /** PGlite: this open created the data directory with initdb, and why the template was not used. */
  readonly initdbBecause?: string;
  /**
   * How many large set-based transactions are worth running at once (the startup reconcile's
   * shares): PGlite runs one statement at a time; PostgreSQL one per backend, each on a core, so
   * one per core of this host (the usual co-located guess: the server's own cores are not
   * visible from here), at most 4 so that the pool keeps connections for everything else.
   */
  readonly setParallelism: number;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL URL; undefined selects PGlite. */
  readonly url: string | undefined;
  /** PGlite data directory; "memory://" keeps everything in memory (tests). */
  readonly dataDir: string;
  readonly poolMax?: number;
}

// int8 (e.g. events.seq) stays a string from pg; toSeq() converts. Dates stay Dates.
export async function openDatabase(options: DatabaseOptions): Promise<OpenedDatabase> {
  if (options.url) {
    const poolMax = options.poolMax ?? 16;
    const pool = new pg.Pool({ connectionString: options.url, max: poolMax });
    // An idle client that errors (server restart) must not crash the process; the next query reconnects.
    pool.on("error", () => {});
    preparePoolStatements(pool);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    // No values: the simple protocol (pg names and prepares only statements with parameters).
    simpleQueries.set(db, async (text) => {
      const r = (await pool.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
      return (Array.isArray(r) ? r : [r]).map((x) => x.rows as Record<string, unknown>[]);
    });
    return {
      db,
      kind: "postgres",
      setParallelism: Math.max(1, Math.min(4, availableParallelism(), poolMax >> 2)),
      location: options.url.replace(/:[^:@/]*@/, ":***@"),
      url: options.url,
      close: () => db.destroy(),
    };
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGliteDialect } = await import("kysely-pglite-dialect");
  let dataDir: string | undefined;
  let seeded = false;
  let initdbBecause: string | undefined;
  if (options.dataDir !== "memory://") {
    dataDir = path.join(options.dataDir, "pgdata");
    await mkdir(options.dataDir, { recursive: true });
    // A first start copies the migrated template rather than running PGlite's initdb (seconds, not tens).
    if (!(await hasCluster(dataDir))) {
      const seed = await seedFromTemplate(dataDir);
      seeded = seed.seeded;
      if (!seed.seeded) initdbBecause = seed.why;
    }
    await mkdir(dataDir, { recursive: true });
  }
  const client = await PGlite.create(dataDir);
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
  return {
    db,
    kind: "pglite",
    setParallelism: 1,
    location: dataDir ?? "memory",
    seededFromTemplate: seeded,
    ...(initdbBecause === undefined ? {} : { initdbBecause }),
    url: undefined,
    close: async () => {
      await db.destroy();
      if (!client.closed) await client.close();
    },
  };
}
