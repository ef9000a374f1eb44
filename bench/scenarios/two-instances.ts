/**
 * Scale-out (issue 12): two Berth instances on one PostgreSQL database, measured against one.
 *
 * - GetWorkspace, 64 in flight: all to instance A (4 connections) vs split over A and B (2 + 2
 *   connections, 32 in flight each). The sessions were created on A, so B answers every call
 *   from its cache checked against PostgreSQL (the version check of promise 1).
 * - WriteFile of the 4 KiB TypeScript module, 16 in flight over 64 sessions created on A: all to
 *   A vs half the sessions written through B. Each session has at most one write in flight.
 * - The added latency of a forwarded turn RPC: a session whose environment lives on A;
 *   BeginTurn (warm) / EndTurn and TurnHeartbeat at concurrency 1 sent to A (local) and to B
 *   (forwarded to A over the advertised address), alternately in one loop.
 *
 * Both instances run on this machine's 2 cores, so "two instances" cannot add cores here: the
 * throughput ratios measure what coherence across instances costs, not horizontal scaling.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { describeLoad, runLoad, type LoadResult } from "../loadgen/index.js";
import { frame } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { CREATE_WORKSPACE, GET_WORKSPACE, populate, SERVICE } from "../lib/fixtures.js";
import { makeGitRepo, tsModule4KiB } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { median, round, sideBySide, type Scenario } from "../lib/scenario.js";
import { startBerth, type BerthProcess } from "../lib/servers.js";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import {
  BeginTurnRequestSchema,
  BeginTurnResponseSchema,
  EndTurnRequestSchema,
  EndTurnResponseSchema,
  TurnHeartbeatRequestSchema,
  TurnHeartbeatResponseSchema,
} from "../../gen/berth/v1/turn_service_pb.js";
import {
  CreateWorkspaceRequestSchema,
  CreateWorkspaceResponseSchema,
  RegisterRepositoryRequestSchema,
  RegisterRepositoryResponseSchema,
  WriteFileRequestSchema,
} from "../../gen/berth/v1/workspace_service_pb.js";

const WORKSPACES = 300;
const WRITE_SESSIONS = 64;
const WRITE_VERSIONS = 8;
const WRITE_IN_FLIGHT = 16;
const TURN_SAMPLES = Number(process.env.BENCH_FORWARD_SAMPLES ?? 60);
const TURNS = "/berth.v1.TurnService";
const WRITE_FILE = `${SERVICE}/WriteFile`;

/** Two loads at once, one per instance, reported as one: throughput summed, percentiles the worse of the two. */
async function both(a: () => Promise<LoadResult>, b: () => Promise<LoadResult>): Promise<LoadResult> {
  const [x, y] = await Promise.all([a(), b()]);
  const errorKinds = { ...x.errorKinds };
  for (const [k, n] of Object.entries(y.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
  return {
    ...x,
    workers: x.workers + y.workers,
    connections: x.connections + y.connections,
    concurrency: x.concurrency + y.concurrency,
    requests: x.requests + y.requests,
    errors: x.errors + y.errors,
    errorKinds,
    throughput: x.throughput + y.throughput,
    p50Ms: Math.max(x.p50Ms, y.p50Ms),
    p99Ms: Math.max(x.p99Ms, y.p99Ms),
    p999Ms: Math.max(x.p999Ms, y.p999Ms),
    maxMs: Math.max(x.maxMs, y.maxMs),
    meanMs: (x.meanMs * x.requests + y.meanMs * y.requests) / Math.max(1, x.requests + y.requests),
    generatorCores: x.generatorCores + y.generatorCores,
  };
}

function failOnErrors(label: string, runs: readonly LoadResult[]): void {
  const errors = runs.reduce((n, r) => n + r.errors, 0);
  if (errors > 0) throw new Error(`${label}: ${errors} errors ${JSON.stringify(runs.map((r) => r.errorKinds))}`);
}

const pct = (xs: readonly number[], q: number) => round([...xs].sort((p, r) => p - r)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!, 2);

async function forwardedTurnLatency(a: BerthProcess, b: BerthProcess, source: string) {
  const ca = new RpcClient(a.grpcUrl);
  const cb = new RpcClient(b.grpcUrl);
  try {
    const repoId = (await ca.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `bench-forward-${Date.now()}`, sourcePath: source })).repository!.id;
    const sessionId = (await ca.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, { repoId, agentId: "bench-forward", agentName: "forward-1", mode: WorkspaceMode.PERSISTENT, baseCommit: "main" })).workspace!.sessionId;
    const begin = (c: RpcClient) => c.unary(`${TURNS}/BeginTurn`, BeginTurnRequestSchema, BeginTurnResponseSchema, { sessionId }, 60_000);
    const end = (c: RpcClient, turnId: string) => c.unary(`${TURNS}/EndTurn`, EndTurnRequestSchema, EndTurnResponseSchema, { turnId, outcome: TurnOutcome.COMPLETED }, 60_000);
    const beat = (c: RpcClient, turnId: string) => c.unary(`${TURNS}/TurnHeartbeat`, TurnHeartbeatRequestSchema, TurnHeartbeatResponseSchema, { turnId });
    const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
      const t = performance.now();
      const r = await fn();
      return [r, performance.now() - t];
    };
    // The first turn goes to A, so A owns the environment; later turns reuse it warm wherever they are sent.
    const first = await begin(ca);
    await end(ca, first.turnId);
    for (let i = 0; i < 5; i++) await end(cb, (await begin(cb)).turnId); // warm-up: JIT, the forwarding channel
    const samples = { beginLocal: [] as number[], beginForwarded: [] as number[], beatLocal: [] as number[], beatForwarded: [] as number[], endLocal: [] as number[], endForwarded: [] as number[] };
    for (let i = 0; i < TURN_SAMPLES; i++) {
      // Alternate which side goes first so neither always follows the other.
      const sides: Array<[RpcClient, "Local" | "Forwarded"]> = i % 2 === 0 ? [[ca, "Local"], [cb, "Forwarded"]] : [[cb, "Forwarded"], [ca, "Local"]];
      for (const [c, where] of sides) {
        const [t, beginMs] = await timed(() => begin(c));
        if (!t.warm) throw new Error(`BeginTurn through ${where === "Local" ? "A" : "B"} came back cold: not a warm sample`);
        samples[`begin${where}`].push(beginMs);
        const [beatReply, beatMs] = await timed(() => beat(c, t.turnId));
        if (!beatReply.current) throw new Error("TurnHeartbeat: the turn just begun is not current");
        samples[`beat${where}`].push(beatMs);
        samples[`end${where}`].push((await timed(() => end(c, t.turnId)))[1]);
      }
    }
    return samples;
  } finally {
    ca.close();
    cb.close();
  }
}

export const scenario: Scenario = {
  name: "two-instances",
  title: "Two instances on one PostgreSQL vs one: GetWorkspace, WriteFile throughput; forwarded vs local turn RPC latency",
  async run(ctx) {
    const db = await createBenchDatabase();
    const source = makeGitRepo(20);
    const envA = mkdtempSync(path.join(tmpdir(), "berth-bench-envs-a-"));
    const envB = mkdtempSync(path.join(tmpdir(), "berth-bench-envs-b-"));
    const a = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir, env: { BERTH_ENV_ROOT: envA, BERTH_INSTANCE_NAME: "bench-a" } });
    const b = await startBerth({ databaseUrl: db.url, env: { BERTH_ENV_ROOT: envB, BERTH_INSTANCE_NAME: "bench-b" } });
    try {
      // ---- GetWorkspace
      const pop = await populate(a.grpcUrl, WORKSPACES);
      ctx.log(`${WORKSPACES} workspaces created on A`);
      const get = { kind: "grpc" as const, path: GET_WORKSPACE, bodies: pop.grpcBodies, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const g = await sideBySide(
        ctx,
        {
          "get@A": () => runLoad({ ...get, url: a.grpcUrl, connections: 4, concurrency: 64 }),
          "get@A+B": () => both(() => runLoad({ ...get, url: a.grpcUrl, workers: 1, connections: 2, concurrency: 32 }), () => runLoad({ ...get, url: b.grpcUrl, workers: 1, connections: 2, concurrency: 32 })),
        },
        (l, r) => ctx.log(`${l.padEnd(10)} ${describeLoad(r)}`),
      );
      failOnErrors("GetWorkspace", [...g.runs["get@A"]!, ...g.runs["get@A+B"]!]);

      // ---- WriteFile
      const client = new RpcClient(a.grpcUrl);
      const repoId = (await client.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `bench-write2-${Date.now()}`, sourcePath: source })).repository!.id;
      const sessions: string[] = [];
      for (let s = 0; s < WRITE_SESSIONS; s++) {
        const r = await client.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, { repoId, intent: `bench: two instances ${s}`, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: `bench-writer2-${s}`, agentName: `writer2-${s}` });
        sessions.push(r.workspace!.sessionId);
      }
      client.close();
      const enc = new TextEncoder();
      const bodiesFor = (from: number, n: number) => {
        const out: Uint8Array[] = [];
        for (let v = 0; v < WRITE_VERSIONS; v++) for (let s = from; s < from + n; s++) out.push(frame(WriteFileRequestSchema, { sessionId: sessions[s]!, path: `src/task-service-${s}.ts`, content: enc.encode(tsModule4KiB((v * 5 + s) % 12, v)) }));
        return out;
      };
      const half = WRITE_SESSIONS / 2;
      const write = { kind: "grpc" as const, path: WRITE_FILE, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const w = await sideBySide(
        ctx,
        {
          "write@A": () => runLoad({ ...write, url: a.grpcUrl, bodiesByWorker: [bodiesFor(0, half), bodiesFor(half, half)], connections: 2, concurrency: WRITE_IN_FLIGHT }),
          "write@A+B": () =>
            both(
              () => runLoad({ ...write, url: a.grpcUrl, bodies: bodiesFor(0, half), workers: 1, connections: 1, concurrency: WRITE_IN_FLIGHT / 2 }),
              () => runLoad({ ...write, url: b.grpcUrl, bodies: bodiesFor(half, half), workers: 1, connections: 1, concurrency: WRITE_IN_FLIGHT / 2 }),
            ),
        },
        (l, r) => ctx.log(`${l.padEnd(10)} ${describeLoad(r)}`),
      );
      failOnErrors("WriteFile", [...w.runs["write@A"]!, ...w.runs["write@A+B"]!]);

      // ---- forwarded turn RPCs
      const t = await forwardedTurnLatency(a, b, source);
      const added = (fwd: number[], local: number[]) => round(median(fwd) - median(local), 2);
      ctx.log(`BeginTurn warm p50 local ${round(median(t.beginLocal), 2)} / forwarded ${round(median(t.beginForwarded), 2)} ms; TurnHeartbeat ${round(median(t.beatLocal), 2)} / ${round(median(t.beatForwarded), 2)} ms; EndTurn ${round(median(t.endLocal), 2)} / ${round(median(t.endForwarded), 2)} ms (n ${t.beginLocal.length} each)`);
      const turnRow = (name: string, fwd: number[], local: number[]) => ({
        figure: `${name} forwarded to the owning instance: p50 at concurrency 1`,
        value: round(median(fwd), 2),
        unit: "ms",
        baseline: { name: `${name} on the owning instance, same loop`, value: round(median(local), 2), unit: "ms" },
        ratio: round(median(fwd) / median(local)),
        note: `forwarding adds ${added(fwd, local)} ms at p50; p90 ${pct(fwd, 0.9)} vs ${pct(local, 0.9)} ms (n ${fwd.length})`,
      });
      return {
        rows: [
          {
            figure: `GetWorkspace through two instances (32 + 32 in flight), ${WORKSPACES} sessions created on A`,
            value: g.throughput["get@A+B"]!,
            unit: "req/s",
            baseline: { name: "GetWorkspace, 64 in flight to one instance", value: g.throughput["get@A"]!, unit: "req/s" },
            ratio: round(g.ratio("get@A+B", "get@A")),
            note: `p99 ${median(g.runs["get@A+B"]!.map((r) => r.p99Ms))} vs ${median(g.runs["get@A"]!.map((r) => r.p99Ms))} ms; both instances share 2 cores, so this is the price of coherence, not scaling`,
          },
          {
            figure: `WriteFile 4 KiB TS through two instances (8 + 8 in flight), ${WRITE_SESSIONS} sessions created on A`,
            value: w.throughput["write@A+B"]!,
            unit: "req/s",
            baseline: { name: `WriteFile, ${WRITE_IN_FLIGHT} in flight to one instance`, value: w.throughput["write@A"]!, unit: "req/s" },
            ratio: round(w.ratio("write@A+B", "write@A")),
            note: `p99 ${median(w.runs["write@A+B"]!.map((r) => r.p99Ms))} vs ${median(w.runs["write@A"]!.map((r) => r.p99Ms))} ms`,
          },
          turnRow("BeginTurn (warm)", t.beginForwarded, t.beginLocal),
          turnRow("TurnHeartbeat", t.beatForwarded, t.beatLocal),
          turnRow("EndTurn (COMPLETED)", t.endForwarded, t.endLocal),
        ],
        commands: [a.command, b.command, `fixture: git repository ${source} (20 files); A and B on one database, env roots ${envA}, ${envB}`],
        runs: { ...g.runs, ...w.runs },
        extra: { turns: t },
      };
    } finally {
      await b.stop();
      await a.stop();
      await db.drop();
      rmSync(source, { recursive: true, force: true });
      rmSync(envA, { recursive: true, force: true });
      rmSync(envB, { recursive: true, force: true });
    }
  },
};
