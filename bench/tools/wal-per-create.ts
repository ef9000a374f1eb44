/**
 * WAL written per CreateWorkspace, load-independent: `rounds` rounds of 64 concurrent auto-named
 * creates through the registry (group-committed), each followed by what the event hub does after
 * a commit (a sequencer pass, as the unit of work's wake asks), on a fresh PostgreSQL database;
 * then pg_walinspect counts the WAL records and bytes of the window that touch this database's
 * relations, plus the commit records of their transactions. Other databases of the cluster are
 * left out, so other workers' load does not count. Also the CPU of this database's backends per
 * create (/proc, 10 ms ticks). BENCH_BERTH_ROOT measures a snapshot of Berth.
 * Usage: npx tsx bench/tools/wal-per-create.ts [rounds=20]
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { createBenchDatabase } from "../lib/database.js";
import { berthModule } from "../lib/servers.js";
import pino from "pino";

const rounds = Number(process.argv[2] ?? 20);
const { openDatabase } = await berthModule("src/platform/database.ts");
const { migrateToLatest } = await berthModule("src/platform/migrate.ts");
const { UnitOfWork } = await berthModule("src/platform/unit-of-work.ts");
const { WorkspaceRegistry } = await berthModule("src/sessions/registry.ts");
const { sequencePending } = await berthModule("src/delivery/sequencer.ts");

const scratch = await createBenchDatabase();
const url = new URL(scratch.url);
const opened = await openDatabase({ url: scratch.url });
const slot = `berth_wal_${process.pid}`;
const probe = new pg.Client({ connectionString: url.toString() });
try {
  await migrateToLatest(opened.db);
  await probe.connect();
  await probe.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  const dboid = (await probe.query("SELECT oid FROM pg_database WHERE datname = current_database()")).rows[0].oid as number;
  const silent = pino({ level: "silent" });
  const passes: Promise<unknown>[] = [];
  const uow = new UnitOfWork(opened.db, silent, (numbered: unknown) => {
    if (!numbered) passes.push(sequencePending(opened.db));
  });
  const registry = new WorkspaceRegistry({ uow, clock: { now: () => Date.now() }, logger: silent });
  await registry.load();
  const repo = await registry.registerRepository("wal", {});
  let n = 0;
  const round = async () => {
    await Promise.all(Array.from({ length: 64 }, () => registry.createWorkspace({ repoId: repo.id, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: `a${n++}`, agentName: undefined, sessionId: undefined, changesetId: undefined })));
    await Promise.all(passes.splice(0));
    await sequencePending(opened.db);
  };
  for (let i = 0; i < 3; i++) await round();
  // Keeps the window's WAL from being recycled before it is read (dropped at the end).
  await probe.query("SELECT pg_create_physical_replication_slot($1, true)", [slot]);
  await probe.query("CHECKPOINT"); // full-page images of the warm-up's pages are not in the window
  const start = (await probe.query("SELECT pg_current_wal_insert_lsn() AS l")).rows[0].l as string;
  // PostgreSQL CPU of this database's backends (the pool's, the probe's): /proc utime + stime.
  const backends = async () => (await probe.query("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).rows.map((r) => r.pid as number);
  const cpuMs = (pid: number) => {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
    } catch {
      return 0;
    }
  };
  const pids = await backends();
  const cpu0 = pids.reduce((a, p) => a + cpuMs(p), 0);
  const creates0 = n;
  for (let i = 0; i < rounds; i++) await round();
  const creates = n - creates0;
  if ((await backends()).some((p) => !pids.includes(p))) console.log("(a backend started during the window: its CPU is not counted)");
  const cpu = pids.reduce((a, p) => a + cpuMs(p), 0) - cpu0;
  // Flushed, not inserted: pg_walinspect reads only what is on disk (every commit above was flushed).
  const end = (await probe.query("SELECT pg_current_wal_flush_lsn() AS l")).rows[0].l as string;
  const r = await probe.query(
    `WITH w AS (SELECT * FROM pg_get_wal_records_info($1, $2)),
       ours AS (SELECT * FROM w WHERE block_ref LIKE $3),
       xids AS (SELECT DISTINCT xid FROM ours WHERE xid <> 0),
       commits AS (SELECT w.* FROM w JOIN xids USING (xid) WHERE w.resource_manager = 'Transaction')
     SELECT (SELECT count(*) FROM ours) AS records, (SELECT sum(record_length) FROM ours) AS bytes,
       (SELECT count(*) FROM commits) AS commits, (SELECT count(*) FROM xids) AS xacts,
       (SELECT sum(fpi_length) FROM ours) AS fpi`,
    [start, end, `%/${dboid}/%`],
  );
  const x = r.rows[0];
  const per = (v: unknown) => (Number(v) / creates).toFixed(2);
  console.log(`${creates} creates: ${per(Number(x.records) + Number(x.commits))} WAL records/create (${per(x.records)} on relations + ${per(x.commits)} commits), ${per(x.bytes)} bytes/create (FPI ${per(x.fpi)}), ${x.xacts} transactions writing; PostgreSQL backends' CPU ${((cpu * 1000) / creates).toFixed(0)} µs/create`);
} finally {
  await probe.query("SELECT pg_drop_replication_slot($1)", [slot]).catch(() => {});
  await probe.end().catch(() => {});
  await opened.close();
  await scratch.drop();
}
