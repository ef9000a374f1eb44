/**
 * Repositories on a git server (issue 28), served by a real `git daemon` on 127.0.0.1:
 * - CreateWorkspace on `main` of a repository registered with its git:// URL, the instance's
 *   mirror warm (every create asks the server for its refs: `ls-remote`, and fetches only when
 *   they moved), against the same on a source path of the same repository: latency at
 *   concurrency 1 (alternating calls, medians), and throughput at 16 in flight (side by side:
 *   a burst shares its fetches).
 * - The first workspace of a 10,000-file repository on a new instance, the mirror cold (the
 *   whole repository fetched by that CreateWorkspace), in seconds, against `git clone --bare`
 *   of the same URL (the floor: the same transfer by git alone). Each sample registers the
 *   repository again (a new id: a new, empty mirror).
 */
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { describeLoad, runLoad } from "../loadgen/index.js";
import { frame } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { CREATE_WORKSPACE, SERVICE } from "../lib/fixtures.js";
import { makeGitRepo } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { median, round, sideBySide, type Scenario } from "../lib/scenario.js";
import { freePort, startBerth } from "../lib/servers.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const SMALL_FILES = 1_000;
const BIG_FILES = Number(process.env.BENCH_REMOTE_FILES ?? 10_000);
const COLD_SAMPLES = Number(process.env.BENCH_REMOTE_COLD ?? 3);
const SEQUENTIAL = Number(process.env.BENCH_REMOTE_SEQUENTIAL ?? 40);

const git = (cwd: string, ...args: string[]) => execFileSync("git", args, { cwd, stdio: "pipe", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } });

/** `git daemon` exporting every repository under `base` on a free port of 127.0.0.1. */
async function gitDaemon(base: string): Promise<{ url: (name: string) => string; command: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const args = ["daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", `--base-path=${base}`, "--listen=127.0.0.1", `--port=${port}`, base];
  const child = spawn("git", args, { stdio: "ignore", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } });
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const c = connect(port, "127.0.0.1");
      c.once("connect", () => (c.destroy(), resolve(true)));
      c.once("error", () => resolve(false));
    });
    if (up) break;
    if (i > 250 || child.exitCode !== null) throw new Error("git daemon did not start");
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    url: (name) => `git://127.0.0.1:${port}/${name}.git`,
    command: `git ${args.join(" ")}`,
    stop: () => new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once("exit", () => resolve()), child.kill("SIGTERM")))),
  };
}

export const scenario: Scenario = {
  name: "remote-repository",
  title: "A repository on a git server: CreateWorkspace with the mirror warm vs a source path; the first workspace of a 10,000-file repository (mirror cold)",
  async run(ctx) {
    const scratch = mkdtempSync(path.join(tmpdir(), "berth-bench-remote-"));
    const base = path.join(scratch, "served");
    const small = makeGitRepo(SMALL_FILES);
    const big = makeGitRepo(BIG_FILES);
    git(scratch, "clone", "-q", "--bare", small, path.join(base, "small.git"));
    git(scratch, "clone", "-q", "--bare", big, path.join(base, "big.git"));
    const daemon = await gitDaemon(base);
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir, env: { BERTH_DATA_DIR: path.join(scratch, "data"), BERTH_ENV_ROOT: path.join(scratch, "envs") } });
    const c = new RpcClient(berth.grpcUrl);
    const register = async (name: string, where: { sourcePath?: string; remoteUrl?: string }) =>
      (await c.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name, ...where }, 60_000)).repository!.id;
    const init = (repoId: string, i: number) => ({ repoId, agentId: `bench-remote-${i % 64}`, intent: "bench", baseCommit: "main", mode: WorkspaceMode.EPHEMERAL });
    const create = (repoId: string, i: number) => c.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, init(repoId, i), 600_000);
    try {
      const stamp = Date.now();
      const sourceId = await register(`bench-source-${stamp}`, { sourcePath: small });
      const remoteId = await register(`bench-remote-${stamp}`, { remoteUrl: daemon.url("small") });
      // Warm-up: the mirror made and fetched, the JIT warm.
      for (let i = 0; i < 5; i++) await Promise.all([create(sourceId, i), create(remoteId, i)]);

      // Latency at concurrency 1, the two alternating.
      const lat: Record<"source" | "remote", number[]> = { source: [], remote: [] };
      for (let i = 0; i < SEQUENTIAL; i++) {
        for (const [label, id] of (i % 2 === 0 ? [["source", sourceId], ["remote", remoteId]] : [["remote", remoteId], ["source", sourceId]]) as ["source" | "remote", string][]) {
          const t = performance.now();
          await create(id, i);
          lat[label].push(performance.now() - t);
        }
      }
      const p50 = { source: median(lat.source), remote: median(lat.remote) };
      ctx.log(`concurrency 1: CreateWorkspace p50 source path ${round(p50.source, 2)} ms, remote (mirror warm) ${round(p50.remote, 2)} ms`);

      // Throughput at 16 in flight, side by side.
      const bodies = (repoId: string) => Array.from({ length: 16 }, (_, i) => frame(CreateWorkspaceRequestSchema, init(repoId, i)));
      const load = { kind: "grpc" as const, concurrency: 16, connections: 2, url: berth.grpcUrl, path: CREATE_WORKSPACE, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const s = await sideBySide(
        ctx,
        { source: () => runLoad({ ...load, bodies: bodies(sourceId) }), remote: () => runLoad({ ...load, bodies: bodies(remoteId) }) },
        (l, r) => ctx.log(`${l.padEnd(8)} ${describeLoad(r)}`),
      );

      // The first workspace of a big repository, the mirror cold; `git clone --bare` as the floor.
      const cold: number[] = [];
      const clone: number[] = [];
      for (let i = 0; i < COLD_SAMPLES; i++) {
        const dir = path.join(scratch, `clone-${i}.git`);
        let t = performance.now();
        git(scratch, "clone", "-q", "--bare", daemon.url("big"), dir);
        clone.push((performance.now() - t) / 1000);
        rmSync(dir, { recursive: true, force: true });
        const id = await register(`bench-big-${stamp}-${i}`, { remoteUrl: daemon.url("big") });
        t = performance.now();
        await create(id, i);
        cold.push((performance.now() - t) / 1000);
        ctx.log(`cold mirror ${i + 1}/${COLD_SAMPLES}: first CreateWorkspace ${round(cold[i]!, 2)} s; git clone --bare ${round(clone[i]!, 2)} s`);
      }
      c.close();
      return {
        rows: [
          {
            figure: `CreateWorkspace on main, repository on a git server (git daemon, ${SMALL_FILES} files), mirror warm: p50 at concurrency 1`,
            value: round(p50.remote, 2),
            unit: "ms",
            baseline: { name: "the same on a source path of the repository, alternating", value: round(p50.source, 2), unit: "ms" },
            ratio: round(p50.remote / p50.source),
            target: "report",
            note: `n ${lat.remote.length}; every create asks the server for its refs (ls-remote) and fetches only when they moved`,
          },
          {
            figure: "CreateWorkspace on main, repository on a git server, mirror warm: throughput, 16 in flight / 2 conn",
            value: s.throughput.remote!,
            unit: "req/s",
            baseline: { name: "the same on a source path", value: s.throughput.source!, unit: "req/s" },
            ratio: round(s.ratio("remote", "source")),
            target: "report",
          },
          {
            figure: `first CreateWorkspace of a ${BIG_FILES.toLocaleString("en-US")}-file repository on a git server, mirror cold (median)`,
            value: round(median(cold), 2),
            unit: "s",
            baseline: { name: "git clone --bare of the same URL", value: round(median(clone), 2), unit: "s" },
            ratio: round(median(cold) / median(clone)),
            target: "report",
            note: `n ${cold.length}: ${cold.map((x) => round(x, 2)).join(", ")} s`,
          },
        ],
        commands: [berth.command, daemon.command, `fixtures: ${SMALL_FILES}- and ${BIG_FILES}-file repositories (bench/lib/repos.ts makeGitRepo), bare clones served from ${base}`],
        runs: s.runs,
        extra: { latencyMs: lat, coldSeconds: cold, cloneSeconds: clone },
      };
    } finally {
      await berth.stop();
      await daemon.stop();
      await db.drop();
      for (const d of [scratch, small, big]) rmSync(d, { recursive: true, force: true });
    }
  },
};
