/**
 * CPU of the session check alone: this process's utime+stime (process.cpuUsage) per
 * WorkspaceRegistry.getWorkspace of a live session, 64 in flight, over 20,000 calls after 3,000
 * of warm-up; 5 rounds, median. No gRPC, no encoding: what the check costs Berth's thread
 * (PostgreSQL's side is not counted). BENCH_BERTH_ROOT measures a snapshot's registry; run two
 * roots alternately to compare them on a loaded machine.
 * Usage: npx tsx bench/tools/session-check-cpu.ts
 */
import path from "node:path";
import pino from "pino";
import { createBenchDatabase } from "../lib/database.js";

const root = path.resolve(process.env.BENCH_BERTH_ROOT ?? path.join(import.meta.dirname, "../.."));
const src = (m: string) => import(path.join(root, "src", m));
const { openDatabase } = await src("platform/database.ts");
const { migrateToLatest } = await src("platform/migrate.ts");
const { UnitOfWork } = await src("platform/unit-of-work.ts");
const { WorkspaceRegistry } = await src("sessions/registry.ts");
const { systemClock } = await src("platform/clock.ts");

const bench = await createBenchDatabase();
const opened = await openDatabase({ url: bench.url, dataDir: "unused" });
try {
  await migrateToLatest(opened.db);
  const silent = pino({ level: "silent" });
  const registry = new WorkspaceRegistry({ uow: new UnitOfWork(opened.db, silent), clock: systemClock, logger: silent });
  await registry.load();
  const repo = await registry.registerRepository("check-cpu", {});
  const ids: string[] = [];
  for (let i = 0; i < 300; i++) {
    const ws = await registry.createWorkspace({ repoId: repo.id, intent: "", baseCommit: "main", mode: "persistent", ttlSeconds: undefined, agentId: `a${i}`, agentName: undefined, sessionId: undefined, changesetId: undefined });
    ids.push(ws.sessionId);
  }
  const calls = async (n: number) => {
    let next = 0;
    await Promise.all(Array.from({ length: 64 }, async () => {
      while (next < n) await registry.getWorkspace(ids[next++ % ids.length]!);
    }));
  };
  const out: number[] = [];
  for (let r = 0; r < 5; r++) {
    await calls(3000);
    const c0 = process.cpuUsage();
    await calls(20000);
    const c = process.cpuUsage(c0);
    out.push(Math.round(((c.user + c.system) / 20000) * 10) / 10);
  }
  const med = [...out].sort((a, b) => a - b)[2];
  console.log(JSON.stringify({ root, medianUs: med, out }));
} finally {
  await opened.close();
  await bench.drop();
}
