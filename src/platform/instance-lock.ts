/**
 * One live process per instance name. The name decides what the start-up reconcile takes for
 * this instance's previous incarnation (whose sessions it strands at once), so two live
 * processes under one name would strand each other's sessions. The guard is a session-level
 * advisory lock on a connection of its own, held for the process's life: PostgreSQL releases it
 * when that connection ends — a clean stop, a crash, a kill -9 (the socket closes) — so a
 * restart after a crash proceeds at once, while a second server under a running one's name is
 * refused. A heartbeat age could not tell "crashed a second ago" from "alive".
 */
import { sql } from "kysely";
import pg from "pg";
import type { Db } from "./database.js";

export interface InstanceNameLock {
  release(): Promise<void>;
}

/** Takes the lock of `name`; undefined when a live process holds it. */
export async function lockInstanceName(url: string, name: string, onLost: (err: Error) => void): Promise<InstanceNameLock | undefined> {
  const client = new pg.Client({ connectionString: url, application_name: `berth instance ${name}`.slice(0, 63) });
  await client.connect();
  try {
    const r = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", [lockKey(name)]);
    if (!r.rows[0]?.ok) {
      await client.end();
      return undefined;
    }
  } catch (err) {
    await client.end().catch(() => undefined); // the query's failure is the one reported
    throw err;
  }
  // A lost lock connection means another process may now take the name: say so loudly.
  client.on("error", onLost);
  return { release: () => client.end() };
}

/**
 * Whether no live process holds `name`'s lock: probed by taking and at once releasing it on one
 * pinned connection. A free lock means the process that held it is gone (its connection ended),
 * which is immediate evidence — unlike a heartbeat, which only goes stale after a while.
 */
export async function instanceNameFree(db: Db, name: string): Promise<boolean> {
  return db.connection().execute(async (conn) => {
    const r = await sql<{ got: boolean }>`SELECT pg_try_advisory_lock(hashtextextended(${lockKey(name)}, 0)) AS got`.execute(conn);
    if (r.rows[0]?.got !== true) return false;
    await sql`SELECT pg_advisory_unlock(hashtextextended(${lockKey(name)}, 0))`.execute(conn);
    return true;
  });
}

function lockKey(name: string): string {
  return `berth-instance:${name}`;
}
