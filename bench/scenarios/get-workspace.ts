/**
 * (2) GetWorkspace, hot (in memory), vs Health/Check on the same gRPC port, both loaded by h2load
 * (-c 4 -m 16: 64 in flight over 4 connections), alternately; plus the same GetWorkspace on a
 * second Berth at BERTH_LOG_LEVEL=info (one log line per RPC), run alternately with the first.
 * h2load sends one body, so the load reads one session of a few hundred live ones; it does not
 * read grpc-status, so the request is checked once through a real client first.
 */
import { GetWorkspaceRequestSchema, GetWorkspaceResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { alternate, h2load, h2loadInstalled, H2LOAD_MISSING } from "../lib/h2load.js";
import { frame, HEALTH_CHECK_FRAME } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { GET_WORKSPACE, populate } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { round, type Scenario } from "../lib/scenario.js";
import { HEALTH_CHECK, startBerth } from "../lib/servers.js";

const WORKSPACES = 300;
const TARGET = 0.9;

async function checkGet(url: string, sessionId: string): Promise<void> {
  const client = new RpcClient(url);
  try {
    const r = await client.unary(GET_WORKSPACE, GetWorkspaceRequestSchema, GetWorkspaceResponseSchema, { sessionId });
    if (r.workspace?.sessionId !== sessionId) throw new Error(`GetWorkspace answered ${r.workspace?.sessionId} for ${sessionId}`);
  } finally {
    client.close();
  }
}

export const scenario: Scenario = {
  name: "get-workspace",
  title: "GetWorkspace (hot) vs Health/Check on Berth's gRPC port (h2load); log level warn vs info",
  async run(ctx) {
    if (!(await h2loadInstalled())) {
      return { rows: [{ figure: "GetWorkspace", value: 0, unit: "", note: H2LOAD_MISSING }], commands: [], runs: {} };
    }
    const dbWarn = await createBenchDatabase();
    const dbInfo = await createBenchDatabase();
    const warn = await startBerth({ databaseUrl: dbWarn.url, cpuProfDir: ctx.cpuProfDir });
    const info = await startBerth({ databaseUrl: dbInfo.url, logLevel: "info" });
    try {
      const a = await populate(warn.grpcUrl, WORKSPACES);
      const b = await populate(info.grpcUrl, WORKSPACES);
      ctx.log(`${WORKSPACES} workspaces created on each server`);
      const sa = a.sessionIds[WORKSPACES >> 1]!;
      const sb = b.sessionIds[WORKSPACES >> 1]!;
      await checkGet(warn.grpcUrl, sa);
      await checkGet(info.grpcUrl, sb);
      const base = { connections: 4, streams: 16, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const s = await alternate(ctx, {
        health: () => h2load({ ...base, url: warn.grpcUrl, path: HEALTH_CHECK, body: HEALTH_CHECK_FRAME }),
        get: () => h2load({ ...base, url: warn.grpcUrl, path: GET_WORKSPACE, body: frame(GetWorkspaceRequestSchema, { sessionId: sa }) }),
        "get@info": () => h2load({ ...base, url: info.grpcUrl, path: GET_WORKSPACE, body: frame(GetWorkspaceRequestSchema, { sessionId: sb }) }),
      });
      const ratio = s.ratio("get", "health");
      const infoRatio = s.ratio("get@info", "get");
      return {
        rows: [
          {
            figure: `GetWorkspace, one of ${WORKSPACES} sessions, h2load -c 4 -m 16`,
            value: s.throughput.get!,
            unit: "req/s",
            baseline: { name: "Health/Check on Berth, h2load", value: s.throughput.health!, unit: "req/s" },
            ratio: round(ratio),
            target: `ratio ≥ ${TARGET}`,
            met: ratio >= TARGET,
          },
          {
            figure: "GetWorkspace at BERTH_LOG_LEVEL=info (a log line per RPC, stdout to /dev/null)",
            value: s.throughput["get@info"]!,
            unit: "req/s",
            baseline: { name: "GetWorkspace at warn", value: s.throughput.get!, unit: "req/s" },
            ratio: round(infoRatio),
            note: `info logging costs ${Math.round((1 - infoRatio) * 100)}% of GetWorkspace throughput (mean ${s.runs["get@info"]!.map((r) => r.meanMs).join("/")} ms vs ${s.runs.get!.map((r) => r.meanMs).join("/")} ms at warn)`,
          },
        ],
        commands: [warn.command, info.command, s.runs.get![0]!.command],
        runs: {},
        extra: { h2load: s.runs },
      };
    } finally {
      await info.stop();
      await warn.stop();
      await dbWarn.drop();
      await dbInfo.drop();
    }
  },
};
