/**
 * First `npm start` of a fresh clone on the embedded default (PGlite, no DATABASE_URL): the
 * committed tree cloned into a temporary directory, node_modules hard-linked from this checkout
 * (as after `npm ci`, which runs no install script here), no data directory, tsx's transform
 * cache off (a fresh machine has none). Figure: median time from spawning `npm start` to
 * grpc.health.v1 SERVING over BENCH_FIRST_START_RUNS runs, each on a new data directory; beside
 * it, the second start of the last run's data directory (nothing to create).
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { median, round, type Scenario } from "../lib/scenario.js";
import { BERTH_ROOT, freePort, stopChild, track, waitHealthy } from "../lib/servers.js";

const RUNS = Number(process.env.BENCH_FIRST_START_RUNS ?? 3);
const TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user + system) the live processes of process group `pgid` have used: on a loaded
 * machine the wall figure stretches with the load, the CPU one much less.
 */
function groupCpuSeconds(pgid: number): number {
  let ticks = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // Fields after the parenthesised command: state ppid pgrp ... utime(14) stime(15) cutime cstime.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(f[2]) === pgid) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return ticks / TICKS_PER_SECOND;
}

export const scenario: Scenario = {
  name: "first-start",
  title: "First npm start of a fresh clone on the embedded database",
  async run(ctx) {
    const tmp = mkdtempSync(path.join(tmpdir(), "berth-first-start-"));
    const clone = path.join(tmp, "berth");
    try {
      execFileSync("git", ["clone", "--quiet", BERTH_ROOT, clone]);
      execFileSync("cp", ["-al", path.join(BERTH_ROOT, "node_modules"), path.join(clone, "node_modules")]);
      const commit = execFileSync("git", ["-C", clone, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(process.env)) {
        if (v !== undefined && !k.startsWith("BERTH_") && k !== "NATS_URL" && k !== "DATABASE_URL" && !k.startsWith("npm_")) env[k] = v;
      }
      const cpu: number[] = [];
      const start = async (): Promise<number> => {
        const [grpcPort, httpPort] = [await freePort(), await freePort()];
        const berthEnv = {
          BERTH_ADDR: `127.0.0.1:${grpcPort}`,
          BERTH_HTTP_ADDR: `127.0.0.1:${httpPort}`,
          BERTH_METRICS_ADDR: "off",
          BERTH_LOG_LEVEL: "warn",
          BERTH_ENV_ROOT: path.join(tmp, "envs"),
          TSX_DISABLE_CACHE: "1",
        };
        const t = performance.now();
        // Its own process group: npm, the shell and node stop together.
        const child = spawn("npm", ["start"], { cwd: clone, env: { ...env, ...berthEnv }, stdio: ["ignore", "pipe", "pipe"], detached: true });
        const { output, exited } = track(child, "npm start");
        await waitHealthy(`http://127.0.0.1:${grpcPort}`, exited, output, "npm start", 120_000);
        const ms = performance.now() - t;
        cpu.push(groupCpuSeconds(child.pid!));
        process.kill(-child.pid!, "SIGTERM");
        await stopChild(child, exited);
        return ms;
      };
      const firstMs: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        rmSync(path.join(clone, ".berth"), { recursive: true, force: true });
        firstMs.push(await start());
      }
      const againMs = await start();
      const value = median(firstMs);
      const firstCpu = median(cpu.slice(0, RUNS));
      ctx.log(`fresh clone of ${commit}: spawn → SERVING ${firstMs.map(Math.round).join("/")} ms (no data directory), ${Math.round(againMs)} ms with one; CPU to SERVING ${cpu.map((c) => c.toFixed(2)).join("/")} s`);
      return {
        rows: [
          {
            figure: "first `npm start` of a fresh clone → SERVING, embedded PGlite (median)",
            value: round(value / 1000, 2),
            unit: "s",
            baseline: { name: "the same clone's second start (data directory present)", value: round(againMs / 1000, 2), unit: "s" },
            target: "< 5 s",
            met: value < 5_000,
            note: `${RUNS} runs, each on a new data directory: ${firstMs.map((m) => (m / 1000).toFixed(2)).join(", ")} s; CPU used to SERVING (npm, shell, node) median ${firstCpu.toFixed(2)} s; tsx cache off`,
          },
        ],
        commands: [`git clone ${BERTH_ROOT} ${clone} && cp -al node_modules ${clone}/ && cd ${clone} && TSX_DISABLE_CACHE=1 BERTH_METRICS_ADDR=off npm start`],
        runs: {},
        extra: { commit, firstMs, againMs, cpuSeconds: cpu },
      };
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  },
};
