/**
 * (2) GetWorkspace, hot (in memory), 64 in flight over 4 connections, spread over a few hundred
 * sessions, vs Health/Check on the same gRPC port; plus the same GetWorkspace on a second Berth
 * at BERTH_LOG_LEVEL=info (one log line per RPC), run alternately with the first.
 */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { HEALTH_CHECK_FRAME } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { GET_WORKSPACE, populate } from "../lib/fixtures.js";
import { round, sideBySide, type Scenario } from "../lib/scenario.js";
import { HEALTH_CHECK, startBerth } from "../lib/servers.js";

const WORKSPACES = 300;

export const scenario: Scenario = {
  name: "get-workspace",
  title: "GetWorkspace (hot) vs Health/Check on Berth's gRPC port; log level warn vs info",
  async run(ctx) {
    const dbWarn = await createBenchDatabase();
    const dbInfo = await createBenchDatabase();
    const warn = await startBerth({ databaseUrl: dbWarn.url, cpuProfDir: ctx.cpuProfDir });
    const info = await startBerth({ databaseUrl: dbInfo.url, logLevel: "info" });
    try {
      const a = await populate(warn.grpcUrl, WORKSPACES);
      const b = await populate(info.grpcUrl, WORKSPACES);
      ctx.log(`${WORKSPACES} workspaces created on each server`);
      const base = { kind: "grpc" as const, connections: 4, concurrency: 64, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const s = await sideBySide(
        ctx,
        {
          health: () => runLoad({ ...base, url: warn.grpcUrl, path: HEALTH_CHECK, bodies: [HEALTH_CHECK_FRAME] }),
          get: () => runLoad({ ...base, url: warn.grpcUrl, path: GET_WORKSPACE, bodies: a.grpcBodies }),
          "get@info": () => runLoad({ ...base, url: info.grpcUrl, path: GET_WORKSPACE, bodies: b.grpcBodies }),
        },
        (l, r) => ctx.log(`${l.padEnd(8)} ${describeLoad(r)}`),
      );
      const ratio = s.ratio("get", "health");
      const infoRatio = s.ratio("get@info", "get");
      return {
        rows: [
          {
            figure: `GetWorkspace, ${WORKSPACES} sessions, 64 in flight / 4 conn`,
            value: s.throughput.get!,
            unit: "req/s",
            baseline: { name: "Health/Check on Berth", value: s.throughput.health!, unit: "req/s" },
            ratio: round(ratio),
            target: "ratio ≥ 0.85",
            met: ratio >= 0.85,
          },
          {
            figure: "GetWorkspace at BERTH_LOG_LEVEL=info (a log line per RPC, stdout to /dev/null)",
            value: s.throughput["get@info"]!,
            unit: "req/s",
            baseline: { name: "GetWorkspace at warn", value: s.throughput.get!, unit: "req/s" },
            ratio: round(infoRatio),
            note: `info logging costs ${Math.round((1 - infoRatio) * 100)}% of GetWorkspace throughput (p50 ${s.runs["get@info"]!.map((r) => r.p50Ms).join("/")} ms vs ${s.runs.get!.map((r) => r.p50Ms).join("/")} ms at warn)`,
          },
        ],
        commands: [warn.command, info.command],
        runs: s.runs,
      };
    } finally {
      await info.stop();
      await warn.stop();
      await dbWarn.drop();
      await dbInfo.drop();
    }
  },
};
