/**
 * (5) 100,000 registered idle workspaces: RSS per workspace (VmRSS of /proc/<pid>/status).
 *
 * Since the lifecycle landed, a (re)started server strands every active workspace it does not
 * own and loads only its own (src/lifecycle: startup reconcile), and CreateWorkspace is
 * serialised by the outbox lock (see create-workspace), so 100,000 through RPC take far longer
 * than the bench's budget. The harness therefore measures:
 *  a) (figure) 100,000 workspaces that a restarted server adopts and keeps in memory: persistent,
 *     changeset MERGED, no owner, batch-inserted in SQL; the server's RSS after start minus that
 *     of a server on an empty database, over the active count CountActive reports after the
 *     restart (a later change in what is adopted shows up there: the figure is then not measured);
 *  b) (cross-check) BENCH_IDLE_RPC (default 3,000) workspaces created through CreateWorkspace in a
 *     running server, 128 in flight over 8 connections, after a warm-up of 200: RSS before/after.
 * "After" RSS is the lowest of several samples once the load stops.
 */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { frame } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { bulkInsertWorkspaces, CREATE_WORKSPACE, createWorkspaceInit, createWorkspaces, registerRepository, SERVICE } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { round, type Row, type Scenario } from "../lib/scenario.js";
import { startBerth, type BerthProcess } from "../lib/servers.js";
import { CountActiveRequestSchema, CountActiveResponseSchema, CreateWorkspaceRequestSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const N = Number(process.env.BENCH_IDLE_WORKSPACES ?? 100_000);
const N_RPC = Number(process.env.BENCH_IDLE_RPC ?? 3_000);
const TARGET_KIB = 4;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Lowest of `samples` RSS readings `everyMs` apart (KiB). */
async function settledRss(p: BerthProcess, samples = 8, everyMs = 500): Promise<{ min: number; readings: number[] }> {
  const readings: number[] = [];
  for (let i = 0; i < samples; i++) {
    await sleep(everyMs);
    readings.push(p.rssKiB());
  }
  return { min: Math.min(...readings), readings };
}

async function countActive(url: string): Promise<number> {
  const c = new RpcClient(url);
  try {
    return (await c.unary(`${SERVICE}/CountActive`, CountActiveRequestSchema, CountActiveResponseSchema, {})).total;
  } finally {
    c.close();
  }
}

export const scenario: Scenario = {
  name: "idle-rss",
  title: `${N.toLocaleString("en-US")} registered idle workspaces: RSS per workspace`,
  async run(ctx) {
    const db = await createBenchDatabase();
    let berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const commands = [berth.command];
    try {
      const client = new RpcClient(berth.grpcUrl);
      const repoId = await registerRepository(client);
      // Warm the CreateWorkspace path (JIT, pool connections) before the "before" reading.
      await createWorkspaces(client, repoId, 200, 64);
      client.close();

      // a) through CreateWorkspace in the running server
      const before = await settledRss(berth, 6);
      const bodies = Array.from({ length: 64 }, (_, i) => frame(CreateWorkspaceRequestSchema, createWorkspaceInit(repoId, i)));
      const load = await runLoad({ kind: "grpc", url: berth.grpcUrl, path: CREATE_WORKSPACE, bodies, connections: 8, concurrency: 128, totalRequests: N_RPC });
      ctx.log(`created by RPC: ${describeLoad(load)}`);
      if (load.errors > 0) throw new Error(`${load.errors} CreateWorkspace calls failed: ${JSON.stringify(load.errorKinds)}`);
      const rpcActive = await countActive(berth.grpcUrl);
      const after = await settledRss(berth);
      const perWsRpc = (after.min - before.min) / N_RPC;
      ctx.log(`RPC: RSS ${before.min} → ${after.min} KiB with ${N_RPC} more → ${perWsRpc.toFixed(2)} KiB per workspace`);
      await berth.stop();

      // b) 100,000 more in SQL, loaded by a restarted server
      const t = Date.now();
      await bulkInsertWorkspaces(db.url, repoId, N, "adoptable");
      ctx.log(`${N} workspaces inserted in SQL in ${Date.now() - t} ms`);
      const emptyDb = await createBenchDatabase();
      const empty = await startBerth({ databaseUrl: emptyDb.url });
      let emptyRss: { min: number; readings: number[] };
      try {
        emptyRss = await settledRss(empty);
      } finally {
        await empty.stop();
        await emptyDb.drop();
      }
      const t1 = Date.now();
      berth = await startBerth({ databaseUrl: db.url });
      const startMs = Date.now() - t1;
      commands.push(berth.command);
      const loadedActive = await countActive(berth.grpcUrl);
      const loaded = await settledRss(berth);
      const perWs = loadedActive > 0 ? (loaded.min - emptyRss.min) / loadedActive : Number.NaN;
      ctx.log(`restart (healthy after ${startMs} ms): ${loadedActive} active loaded, RSS ${loaded.min} KiB vs ${emptyRss.min} KiB on an empty database → ${perWs.toFixed(2)} KiB per workspace`);

      const rows: Row[] = [
        {
          figure: `RSS per idle workspace, ${loadedActive.toLocaleString("en-US")} persistent ones adopted and loaded at start`,
          value: loadedActive > 0 ? round(perWs, 2) : 0,
          unit: "KiB",
          baseline: { name: "server on an empty database", value: emptyRss.min, unit: "KiB" },
          target: `≤ ${TARGET_KIB} KiB`,
          met: loadedActive >= N ? perWs <= TARGET_KIB : undefined,
          note:
            loadedActive >= N
              ? `loaded RSS ${loaded.min} KiB (samples ${loaded.readings.join(", ")}); healthy ${startMs} ms after spawn`
              : `NOT MEASURED: only ${loadedActive} of the ${N} adoptable rows were active after the restart`,
        },
        {
          figure: `RSS per idle workspace, ${N_RPC.toLocaleString("en-US")} created by CreateWorkspace in a running server`,
          value: round(perWsRpc, 2),
          unit: "KiB",
          baseline: { name: "RSS before → after", value: after.min - before.min, unit: `KiB (${before.min} → ${after.min})` },
          target: `≤ ${TARGET_KIB} KiB`,
          met: perWsRpc <= TARGET_KIB,
          note: `cross-check on a small count (RSS noise of a few MiB matters); created at ${load.throughput} req/s, 128 in flight / 8 conn; RSS samples after: ${after.readings.join(", ")} KiB`,
        },
      ];
      return { rows, commands, runs: { "create (count mode)": [load] }, extra: { before, after, loaded, emptyRss, rpcActive, loadedActive, startMs } };
    } finally {
      await berth.stop();
      await db.drop();
    }
  },
};
