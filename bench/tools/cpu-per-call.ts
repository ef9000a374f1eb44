/**
 * Server CPU per unary call (utime+stime of the server process from /proc over 20,000 h2load
 * calls, after 3,000 of warm-up; 3 rounds, median): the bare grpc-js no-op, Berth's
 * Health/Check and Berth's GetWorkspace (one of 300 sessions). Unlike throughput ratios, this
 * holds still on a shared, loaded machine. BENCH_BERTH_ROOT measures a snapshot of Berth.
 * Usage: npx tsx bench/tools/cpu-per-call.ts
 */
import { readFileSync } from "node:fs";
import { GetWorkspaceRequestSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { h2load } from "../lib/h2load.js";
import { frame, HEALTH_CHECK_FRAME } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { GET_WORKSPACE, populate } from "../lib/fixtures.js";
import { HEALTH_CHECK, startBareGrpc, startBerth } from "../lib/servers.js";

const cpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
};
const db = await createBenchDatabase();
const berth = await startBerth({ databaseUrl: db.url });
const bare = await startBareGrpc();
try {
  const a = await populate(berth.grpcUrl, 300);
  const body = frame(GetWorkspaceRequestSchema, { sessionId: a.sessionIds[150]! });
  const loads = {
    bare: [bare.pid, bare.grpcUrl, HEALTH_CHECK, HEALTH_CHECK_FRAME],
    health: [berth.pid, berth.grpcUrl, HEALTH_CHECK, HEALTH_CHECK_FRAME],
    get: [berth.pid, berth.grpcUrl, GET_WORKSPACE, body],
  } as const;
  const out: Record<string, number[]> = { bare: [], health: [], get: [] };
  for (let r = 0; r < 3; r++) {
    for (const [name, [pid, url, path, b]] of Object.entries(loads)) {
      await h2load({ url, path, body: b, connections: 4, streams: 16, requests: 3000 });
      const c0 = cpuMs(pid);
      const h = await h2load({ url, path, body: b, connections: 4, streams: 16, requests: 20000 });
      const us = ((cpuMs(pid) - c0) * 1000) / h.succeeded;
      out[name]!.push(Math.round(us * 10) / 10);
      console.log(`${name} ${h.throughput} req/s, ${us.toFixed(1)} µs server CPU per call`);
    }
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[1]!;
  console.log(JSON.stringify({ root: process.env.BENCH_BERTH_ROOT ?? "mine", median: Object.fromEntries(Object.entries(out).map(([k, v]) => [k, med(v)])), out }));
} finally {
  await bare.stop();
  await berth.stop();
  await db.drop();
  process.exit(0);
}
