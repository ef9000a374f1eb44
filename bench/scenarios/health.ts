/** (1) Health/Check on Berth's gRPC port vs the same RPC on a bare grpc-js server (the stack's limit). */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { HEALTH_CHECK_FRAME } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { round, sideBySide, type Scenario } from "../lib/scenario.js";
import { HEALTH_CHECK, startBareGrpc, startBerth } from "../lib/servers.js";

export const scenario: Scenario = {
  name: "health",
  title: "Health/Check on Berth's gRPC port vs bare grpc-js",
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const bare = await startBareGrpc();
    try {
      const load = (url: string) => () => runLoad({ kind: "grpc", url, path: HEALTH_CHECK, bodies: [HEALTH_CHECK_FRAME], connections: 4, concurrency: 64, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs });
      const s = await sideBySide(ctx, { bare: load(bare.grpcUrl), berth: load(berth.grpcUrl) }, (l, r) => ctx.log(`${l.padEnd(6)} ${describeLoad(r)}`));
      const ratio = s.ratio("berth", "bare");
      return {
        rows: [
          {
            figure: "Health/Check on Berth, 64 in flight / 4 conn",
            value: s.throughput.berth!,
            unit: "req/s",
            baseline: { name: "bare grpc-js no-op", value: s.throughput.bare!, unit: "req/s" },
            ratio: round(ratio),
            target: "ratio ≥ 0.8",
            met: ratio >= 0.8,
          },
        ],
        commands: [berth.command, bare.command],
        runs: s.runs,
      };
    } finally {
      await bare.stop();
      await berth.stop();
      await db.drop();
    }
  },
};
