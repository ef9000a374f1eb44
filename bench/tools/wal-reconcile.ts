/**
 * WAL written by the startup reconcile of N orphans (default 100,000) and the numbering of its
 * events, load-independent: a server strands the orphans at start; once SERVING, the script
 * waits until no event is left unnumbered, then pg_walinspect counts the records and bytes of
 * the window that touch this database's relations (other databases of the cluster, other
 * workers' load, are left out), plus the commits of their transactions. Also prints spawn →
 * SERVING and spawn → every event numbered (wall clock: noisy on a shared machine).
 * BENCH_BERTH_ROOT measures a snapshot of Berth.
 * Usage: BENCH_RECONCILE_ROWS=100000 npx tsx bench/tools/wal-reconcile.ts
 */
import { performance } from "node:perf_hooks";
import pg from "pg";
import { createBenchDatabase } from "../lib/database.js";
import { bulkInsertWorkspaces, registerRepository } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { startBerth } from "../lib/servers.js";

const N = Number(process.env.BENCH_RECONCILE_ROWS ?? 100_000);
const db = await createBenchDatabase();
const slot = `berth_wal_${process.pid}`;
const probe = new pg.Client({ connectionString: db.url });
try {
  const first = await startBerth({ databaseUrl: db.url });
  const c = new RpcClient(first.grpcUrl);
  const repoId = await registerRepository(c);
  c.close();
  await first.stop();
  await bulkInsertWorkspaces(db.url, repoId, N, "draft");
  await probe.connect();
  await probe.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  await probe.query("VACUUM ANALYZE");
  // Keeps the window's WAL from being recycled before it is read (dropped at the end).
  await probe.query("SELECT pg_create_physical_replication_slot($1, true)", [slot]);
  await probe.query("CHECKPOINT");
  const dboid = (await probe.query("SELECT oid FROM pg_database WHERE datname = current_database()")).rows[0].oid as number;
  const start = (await probe.query("SELECT pg_current_wal_insert_lsn() AS l")).rows[0].l as string;
  const t0 = performance.now();
  const s = await startBerth({ databaseUrl: db.url });
  const serving = performance.now() - t0;
  const unnumbered = async () => Number((await probe.query("SELECT count(*) AS n FROM events WHERE seq IS NULL")).rows[0].n);
  while ((await unnumbered()) > 0) await new Promise((r) => setTimeout(r, 20));
  const numbered = performance.now() - t0;
  // Flushed, not inserted: pg_walinspect reads only what is on disk (every commit above was flushed).
  const end = (await probe.query("SELECT pg_current_wal_flush_lsn() AS l")).rows[0].l as string;
  await s.stop();
  const r = await probe.query(
    `WITH w AS (SELECT * FROM pg_get_wal_records_info($1, $2)),
       ours AS (SELECT * FROM w WHERE block_ref LIKE $3),
       xids AS (SELECT DISTINCT xid FROM ours WHERE xid <> 0)
     SELECT (SELECT count(*) FROM ours) AS records, (SELECT sum(record_length) FROM ours) AS bytes,
       (SELECT count(*) FROM w JOIN xids USING (xid) WHERE w.resource_manager = 'Transaction') AS commits,
       (SELECT count(*) FROM xids) AS xacts`,
    [start, end, `%/${dboid}/%`],
  );
  const stranded = Number((await probe.query("SELECT count(*) AS n FROM events WHERE kind = 'session.stranded'")).rows[0].n);
  const x = r.rows[0];
  console.log(`${N} orphans, ${stranded} session.stranded: spawn → SERVING ${Math.round(serving)} ms, → all numbered ${Math.round(numbered)} ms; WAL ${x.records} records on relations (${(Number(x.bytes) / 1e6).toFixed(1)} MB), ${x.commits} commits of ${x.xacts} writing transactions`);
} finally {
  await probe.query("SELECT pg_drop_replication_slot($1)", [slot]).catch(() => {});
  await probe.end().catch(() => {});
  await db.drop();
}
