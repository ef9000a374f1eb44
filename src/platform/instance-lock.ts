/**
 * One live process per instance name. The name decides what the start-up reconcile takes for
 * this instance's previous incarnation (whose sessions it strands at once), so two live
 * processes under one name would strand each other's sessions. The guard is a session-level
 * advisory lock on a connection of its own, held for the process's life: PostgreSQL releases it
 * when that connection ends — a clean stop, a crash, a kill -9 (the socket closes) — so a
 * restart after a crash proceeds at once, while a second server under a running one's name is
 * refused. A heartbeat age could not tell "crashed a second ago" from "alive".
 */
import pg from "pg";

export interface InstanceNameLock {
  release(): Promise<void>;
}

/** Takes the lock of `name`; undefined when a live process holds it. */
export async function lockInstanceName(url: string, name: string, onLost: (err: Error) => void): Promise<InstanceNameLock | undefined> {
  const client = new pg.Client({ connectionString: url, application_name: `berth instance ${name}`.slice(0, 63) });
  await client.connect();
  try {
    const r = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", [`berth-instance:${name}`]);
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
