/**
 * BeginTurn warm and cold on a 1,000-file git repository (real server, BERTH_ENV_ROOT in a temp
 * dir), measured as the RPC latency from the client at concurrency 1 (one connection, one call
 * at a time), with Health/Check latency sampled in the same loop as the floor of an RPC here.
 * Cold: the previous turn ended FAILED (environment torn down), so BeginTurn materialises it;
 * warm: the previous turn ended COMPLETED (environment parked idle), so BeginTurn reuses it.
 * Each response's `warm` flag is checked: a sample in the wrong bucket fails the scenario.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { createBenchDatabase } from "../lib/database.js";
import { CREATE_WORKSPACE, SERVICE } from "../lib/fixtures.js";
import { makeGitRepo } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { median, round, type Scenario } from "../lib/scenario.js";
import { HEALTH_CHECK, startBerth } from "../lib/servers.js";
import { HealthCheckRequestSchema, HealthCheckResponseSchema } from "../../gen/grpc/health/v1/health_pb.js";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { BeginTurnRequestSchema, BeginTurnResponseSchema, EndTurnRequestSchema, EndTurnResponseSchema } from "../../gen/berth/v1/turn_service_pb.js";
import { CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const FILES = 1_000;
const COLD = Number(process.env.BENCH_TURN_COLD ?? 8);
const WARM_PER_COLD = 4;
const TURNS = "/berth.v1.TurnService";

export const scenario: Scenario = {
  name: "begin-turn",
  title: `BeginTurn warm / cold on a ${FILES.toLocaleString("en-US")}-file git repository (RPC latency at concurrency 1)`,
  async run(ctx) {
    const source = makeGitRepo(FILES);
    const envRoot = mkdtempSync(path.join(tmpdir(), "berth-bench-envs-"));
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir, env: { BERTH_ENV_ROOT: envRoot } });
    try {
      const c = new RpcClient(berth.grpcUrl);
      const repoId = (await c.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `bench-turns-${Date.now()}`, sourcePath: source })).repository!.id;
      const sessionId = (await c.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, { repoId, agentId: "bench-turns", agentName: "turns-1", mode: WorkspaceMode.PERSISTENT, baseCommit: "main" })).workspace!.sessionId;
      const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
        const t = performance.now();
        const r = await fn();
        return [r, performance.now() - t];
      };
      const begin = () => c.unary(`${TURNS}/BeginTurn`, BeginTurnRequestSchema, BeginTurnResponseSchema, { sessionId }, 60_000);
      const end = (turnId: string, outcome: TurnOutcome) => c.unary(`${TURNS}/EndTurn`, EndTurnRequestSchema, EndTurnResponseSchema, { turnId, outcome }, 60_000);
      const cold: number[] = [];
      const warm: number[] = [];
      const health: number[] = [];
      let mapStatus = "";
      // Warm-up: one cold and a few warm turns (JIT, pool connections, git object cache), not counted.
      let [t] = await timed(begin);
      await end(t.turnId, TurnOutcome.COMPLETED);
      for (let i = 0; i < 3; i++) {
        [t] = await timed(begin);
        await end(t.turnId, TurnOutcome.COMPLETED);
      }
      await end((await begin()).turnId, TurnOutcome.FAILED);
      for (let i = 0; i < COLD; i++) {
        let ms: number;
        [t, ms] = await timed(begin);
        if (t.warm) throw new Error("BeginTurn after a FAILED turn came back warm: not a cold sample");
        cold.push(ms);
        mapStatus = String(t.workspaceMap?.status ?? "");
        await end(t.turnId, TurnOutcome.COMPLETED);
        for (let j = 0; j < WARM_PER_COLD; j++) {
          health.push((await timed(() => c.unary(HEALTH_CHECK, HealthCheckRequestSchema, HealthCheckResponseSchema, {})))[1]);
          [t, ms] = await timed(begin);
          if (!t.warm) throw new Error("BeginTurn after a COMPLETED turn came back cold: not a warm sample");
          warm.push(ms);
          await end(t.turnId, j === WARM_PER_COLD - 1 ? TurnOutcome.FAILED : TurnOutcome.COMPLETED);
        }
      }
      c.close();
      const p = (xs: number[], q: number) => round([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!, 2);
      ctx.log(`cold p50 ${p(cold, 0.5)} p90 ${p(cold, 0.9)} ms (n ${cold.length}); warm p50 ${p(warm, 0.5)} p90 ${p(warm, 0.9)} ms (n ${warm.length}); Health/Check p50 ${p(health, 0.5)} ms; map status ${mapStatus}`);
      return {
        rows: [
          {
            figure: `BeginTurn warm (after EndTurn COMPLETED), ${FILES} files: RPC p50 at concurrency 1`,
            value: round(median(warm), 2),
            unit: "ms",
            baseline: { name: "Health/Check p50, same loop", value: round(median(health), 2), unit: "ms" },
            target: "< 3 ms",
            met: median(warm) < 3,
            note: `n ${warm.length}; p90 ${p(warm, 0.9)} ms, max ${p(warm, 1)} ms`,
          },
          {
            figure: `BeginTurn cold (after EndTurn FAILED), ${FILES} files: RPC p50 at concurrency 1`,
            value: round(median(cold), 2),
            unit: "ms",
            baseline: { name: "Health/Check p50, same loop", value: round(median(health), 2), unit: "ms" },
            target: "< 300 ms",
            met: median(cold) < 300,
            note: `n ${cold.length}; p90 ${p(cold, 0.9)} ms, max ${p(cold, 1)} ms`,
          },
        ],
        commands: [berth.command, `fixture: git repository ${source} (${FILES} files), BERTH_ENV_ROOT ${envRoot}; client: one connection, BeginTurn/EndTurn in sequence`],
        runs: {},
        extra: { cold, warm, health },
      };
    } finally {
      await berth.stop();
      await db.drop();
      rmSync(source, { recursive: true, force: true });
      rmSync(envRoot, { recursive: true, force: true });
    }
  },
};
