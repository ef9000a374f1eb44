/**
 * (1) Health/Check on Berth's gRPC port vs the same RPC on a bare grpc-js server (the stack's
 * limit), both loaded by h2load (-c 4 -m 16: 64 in flight over 4 connections), alternately. Our
 * Node generator is slower than either server (h2load-check), so it would compress the ratio
 * towards 1; without h2load the row is "not checked".
 */
import { alternate, h2load, h2loadInstalled, H2LOAD_MISSING } from "../lib/h2load.js";
import { HEALTH_CHECK_FRAME } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { round, type Scenario } from "../lib/scenario.js";
import { HEALTH_CHECK, startBareGrpc, startBerth } from "../lib/servers.js";

export const TARGET = 0.9;

export const scenario: Scenario = {
  name: "health",
  title: "Health/Check on Berth's gRPC port vs bare grpc-js (h2load)",
  async run(ctx) {
    if (!(await h2loadInstalled())) {
      return { rows: [{ figure: "Health/Check on Berth", value: 0, unit: "", note: H2LOAD_MISSING }], commands: [], runs: {} };
    }
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const bare = await startBareGrpc();
    try {
      const load = (url: string) => () => h2load({ url, path: HEALTH_CHECK, body: HEALTH_CHECK_FRAME, connections: 4, streams: 16, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs });
      const s = await alternate(ctx, { bare: load(bare.grpcUrl), berth: load(berth.grpcUrl) });
      const ratio = s.ratio("berth", "bare");
      return {
        rows: [
          {
            figure: "Health/Check on Berth, h2load -c 4 -m 16",
            value: s.throughput.berth!,
            unit: "req/s",
            baseline: { name: "bare grpc-js no-op, h2load", value: s.throughput.bare!, unit: "req/s" },
            ratio: round(ratio),
            target: `ratio ≥ ${TARGET}`,
            met: ratio >= TARGET,
          },
        ],
        commands: [berth.command, bare.command, s.runs.berth![0]!.command],
        runs: {},
        extra: { h2load: s.runs },
      };
    } finally {
      await bare.stop();
      await berth.stop();
      await db.drop();
    }
  },
};
