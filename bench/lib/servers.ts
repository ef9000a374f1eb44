/**
 * Servers under test, each in its own process: Berth (`node --import tsx src/main.ts serve`)
 * and the bare grpc-js baseline (bench/servers/bare-grpc.ts). Ports are picked here and passed
 * in, readiness is polled over gRPC health, RSS is read from /proc/<pid>/status.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { HealthCheckRequestSchema, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { RpcClient } from "./rpc.js";

export const ROOT = path.resolve(new URL("../..", import.meta.url).pathname);
export const HEALTH_CHECK = "/grpc.health.v1.Health/Check";
/** The checkout whose server is measured (default this one): BENCH_BERTH_ROOT points at a snapshot while src/ is mid-edit. */
export const BERTH_ROOT = process.env.BENCH_BERTH_ROOT ? path.resolve(process.env.BENCH_BERTH_ROOT) : ROOT;

/** A module of the measured checkout (BERTH_ROOT), for in-process tools that run Berth's code without a server. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a snapshot's module has no types here
export const berthModule = (file: string): Promise<any> => import(path.join(BERTH_ROOT, file));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface ServerProcess {
  readonly name: string;
  readonly pid: number;
  readonly grpcUrl: string;
  /** The command that starts it, for the reproduction line. */
  readonly command: string;
  rssKiB(): number;
  stop(): Promise<void>;
}

export interface BerthProcess extends ServerProcess {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly httpUrl: string;
}

const running = new Set<ChildProcess>();

/** Kills every server still running (harness exit). */
export function killAllServers(): void {
  for (const c of running) c.kill("SIGKILL");
}

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]);
}

export function track(child: ChildProcess, name: string): { output: () => string; exited: Promise<number | null> } {
  running.add(child);
  let tail = "";
  const keep = (b: Buffer) => {
    tail = (tail + b.toString()).slice(-8_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<number | null>((r) =>
    child.once("exit", (code) => {
      running.delete(child);
      r(code);
    }),
  );
  void name;
  return { output: () => tail, exited };
}

export async function waitHealthy(url: string, exited: Promise<number | null>, output: () => string, name: string, timeoutMs = 60_000): Promise<void> {
  const client = new RpcClient(url);
  let dead = false;
  // Only flags the exit for the loop below; `exited` never rejects (it is resolved by the child's exit event).
  void exited.then(() => (dead = true));
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      if (dead) throw new Error(`${name} exited during start:\n${output()}`);
      try {
        const r = await client.unary(HEALTH_CHECK, HealthCheckRequestSchema, HealthCheckResponseSchema, {}, 2_000);
        if (r.status === HealthCheckResponse_ServingStatus.SERVING) return;
      } catch {
        client.close();
      }
      if (Date.now() > deadline) throw new Error(`${name} not healthy after ${timeoutMs} ms:\n${output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    client.close();
  }
}

export async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(t);
}

export interface BerthOptions {
  readonly databaseUrl: string;
  /** pino level; warn by default (the per-RPC info line would dominate). */
  readonly logLevel?: string;
  /** Write a V8 CPU profile into this directory on exit. */
  readonly cpuProfDir?: string;
  /** Extra environment (NATS_URL, GC settings, ... for later scenarios). */
  readonly env?: Record<string, string>;
}

export async function startBerth(options: BerthOptions): Promise<BerthProcess> {
  const [grpcPort, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !k.startsWith("BERTH_") && k !== "NATS_URL" && k !== "DATABASE_URL") env[k] = v;
  }
  const berthEnv: Record<string, string> = {
    BERTH_ADDR: `127.0.0.1:${grpcPort}`,
    BERTH_HTTP_ADDR: `127.0.0.1:${httpPort}`,
    // Metrics stay on (production has them) on a port of their own: the default 9464 is shared by every server on the machine.
    BERTH_METRICS_ADDR: `127.0.0.1:${metricsPort}`,
    BERTH_LOG_LEVEL: options.logLevel ?? "warn",
    BERTH_LOG_FORMAT: "json",
    BERTH_SHUTDOWN_GRACE_MS: "1000",
    DATABASE_URL: options.databaseUrl,
    ...options.env,
  };
  const nodeArgs: string[] = [];
  if (options.cpuProfDir) {
    mkdirSync(options.cpuProfDir, { recursive: true });
    nodeArgs.push("--cpu-prof", `--cpu-prof-dir=${options.cpuProfDir}`);
  }
  const args = [...nodeArgs, "--import", "tsx", "src/main.ts", "serve"];
  // An info-level log writes one line per RPC: send it to /dev/null (the harness must not pay for it).
  const quietStdout = (options.logLevel ?? "warn") === "info" || options.logLevel === "debug" || options.logLevel === "trace";
  const child = spawn(process.execPath, args, { cwd: BERTH_ROOT, env: { ...env, ...berthEnv }, stdio: ["ignore", quietStdout ? "ignore" : "pipe", "pipe"] });
  const { output, exited } = track(child, "berth");
  const grpcUrl = `http://127.0.0.1:${grpcPort}`;
  await waitHealthy(grpcUrl, exited, output, "berth");
  const command = `${BERTH_ROOT === ROOT ? "" : `cd ${BERTH_ROOT} && `}${Object.entries(berthEnv).map(([k, v]) => `${k}=${v}`).join(" ")} node ${args.join(" ")}`;
  return {
    name: "berth",
    pid: child.pid!,
    grpcPort,
    httpPort,
    grpcUrl,
    httpUrl: `http://127.0.0.1:${httpPort}`,
    command,
    rssKiB: () => rssOf(child.pid!),
    stop: () => stopChild(child, exited),
  };
}

/** The bare grpc-js server: a no-op unary handler for grpc.health.v1.Health/Check, nothing else. */
export async function startBareGrpc(): Promise<ServerProcess> {
  const port = await freePort();
  const args = ["--import", "tsx", "bench/servers/bare-grpc.ts", String(port)];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const { output, exited } = track(child, "bare-grpc");
  const grpcUrl = `http://127.0.0.1:${port}`;
  await waitHealthy(grpcUrl, exited, output, "bare grpc-js");
  return {
    name: "bare-grpc",
    pid: child.pid!,
    grpcUrl,
    command: `node ${args.join(" ")}`,
    rssKiB: () => rssOf(child.pid!),
    stop: () => stopChild(child, exited),
  };
}

/** The bare streaming server (bench/servers/bare-stream.ts): Publish fans a pre-encoded message out to every Watch stream. */
export async function startBareStream(): Promise<ServerProcess> {
  const port = await freePort();
  const args = ["--import", "tsx", "bench/servers/bare-stream.ts", String(port)];
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const { output, exited } = track(child, "bare-stream");
  const grpcUrl = `http://127.0.0.1:${port}`;
  await waitHealthy(grpcUrl, exited, output, "bare grpc-js stream");
  return {
    name: "bare-stream",
    pid: child.pid!,
    grpcUrl,
    command: `node ${args.join(" ")}`,
    rssKiB: () => rssOf(child.pid!),
    stop: () => stopChild(child, exited),
  };
}
