/**
 * (3) The same GetWorkspace over the Connect protocol (binary application/proto POST over h2c)
 * on Berth's HTTP port, alternately with gRPC on the gRPC port of the same server.
 */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { createBenchDatabase } from "../lib/database.js";
import { GET_WORKSPACE, populate } from "../lib/fixtures.js";
import { round, sideBySide, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";

const WORKSPACES = 300;

export const scenario: Scenario = {
  name: "connect-get-workspace",
  title: "GetWorkspace over Connect (HTTP port, application/proto over h2) beside gRPC",
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    try {
      const p = await populate(berth.grpcUrl, WORKSPACES);
      const base = { connections: 4, concurrency: 64, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs, path: GET_WORKSPACE };
      const s = await sideBySide(
        ctx,
        {
          grpc: () => runLoad({ ...base, kind: "grpc", url: berth.grpcUrl, bodies: p.grpcBodies }),
          connect: () => runLoad({ ...base, kind: "connect", url: berth.httpUrl, bodies: p.connectBodies }),
        },
        (l, r) => ctx.log(`${l.padEnd(8)} ${describeLoad(r)}`),
      );
      return {
        rows: [
          {
            figure: `GetWorkspace over Connect, ${WORKSPACES} sessions, 64 in flight / 4 conn`,
            value: s.throughput.connect!,
            unit: "req/s",
            baseline: { name: "GetWorkspace over gRPC", value: s.throughput.grpc!, unit: "req/s" },
            ratio: round(s.ratio("connect", "grpc")),
          },
        ],
        commands: [berth.command],
        runs: s.runs,
      };
    } finally {
      await berth.stop();
      await db.drop();
    }
  },
};
