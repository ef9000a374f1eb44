/**
 * Checks our load generator against an external one: h2load (Debian's nghttp2-client) with a
 * pre-encoded gRPC request body, -c 4 -m 16 (64 in flight over 4 connections, like ours), on
 * Health/Check of the bare grpc-js server and of Berth, alternately with our generator.
 * h2load counts HTTP 2xx as success and does not read grpc-status; Health/Check never fails.
 */
import { describeLoad, runLoad, type LoadResult } from "../loadgen/index.js";
import { HEALTH_CHECK_FRAME } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { h2load, h2loadInstalled, H2LOAD_MISSING, type H2loadRun } from "../lib/h2load.js";
import { median, round, type Row, type Scenario } from "../lib/scenario.js";
import { HEALTH_CHECK, startBareGrpc, startBerth } from "../lib/servers.js";

export const scenario: Scenario = {
  name: "h2load-check",
  title: "Our load generator checked against h2load (Health/Check, 64 in flight over 4 connections)",
  async run(ctx) {
    if (!(await h2loadInstalled())) {
      return { rows: [{ figure: "h2load check", value: 0, unit: "", note: H2LOAD_MISSING }], commands: [], runs: {} };
    }
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url });
    const bare = await startBareGrpc();
    try {
      const rows: Row[] = [];
      const runs: Record<string, LoadResult[]> = {};
      const commands = [berth.command, bare.command];
      const h2runs: Record<string, H2loadRun[]> = {};
      for (const [name, server] of [["bare grpc-js", bare], ["Berth", berth]] as const) {
        const ours: LoadResult[] = [];
        const theirs: H2loadRun[] = [];
        for (let round = 0; round < Math.min(ctx.rounds, 2); round++) {
          const r = await runLoad({ kind: "grpc", url: server.grpcUrl, path: HEALTH_CHECK, bodies: [HEALTH_CHECK_FRAME], connections: 4, concurrency: 64, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs });
          ctx.log(`ours   ${name.padEnd(12)} ${describeLoad(r)}`);
          ours.push(r);
          // About as long as our measured window; h2load has no warm-up of its own.
          const n = Math.max(5_000, Math.round((r.throughput * ctx.durationMs) / 1000));
          const h = await h2load({ url: server.grpcUrl, path: HEALTH_CHECK, body: HEALTH_CHECK_FRAME, connections: 4, streams: 16, requests: n });
          ctx.log(`h2load ${name.padEnd(12)} ${h.throughput} req/s (${h.succeeded} succeeded, ${h.failed} failed)`);
          theirs.push(h);
        }
        runs[`ours: ${name}`] = ours;
        h2runs[name] = theirs;
        commands.push(theirs[0]!.command.replace(/-n \d+/, "-n N"));
        const o = median(ours.map((r) => r.throughput));
        const t = median(theirs.map((h) => h.throughput));
        rows.push({
          figure: `our generator, Health/Check on ${name}`,
          value: o,
          unit: "req/s",
          baseline: { name: "h2load -c 4 -m 16", value: t, unit: "req/s" },
          ratio: round(o / t),
          note: `h2load failed ${theirs.map((h) => h.failed).join("/")}; ours errors ${ours.map((r) => r.errors).join("/")}; our generator used ${ours.map((r) => r.generatorCores).join("/")} cores`,
        });
      }
      return { rows, commands, runs, extra: { h2load: h2runs } };
    } finally {
      await bare.stop();
      await berth.stop();
      await db.drop();
    }
  },
};
