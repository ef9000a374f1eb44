/**
 * The load generator: forks worker processes (bench/loadgen/worker.ts, never the server's
 * process), splits connections and in-flight requests between them, starts them together,
 * and merges their HDR histograms (encoded, decoded, added).
 */
import { fork, type ChildProcess } from "node:child_process";
import hdr from "hdr-histogram-js";
import type { FromWorker, LoadKind, ToWorker, WorkerResult, WorkerSpec } from "./protocol.js";

export interface LoadSpec {
  readonly kind: LoadKind;
  readonly url?: string;
  readonly path?: string;
  /** Pre-encoded bodies (gRPC frames for grpc, bare messages for connect), round-robin. */
  readonly bodies?: readonly Uint8Array[];
  /** Bodies per worker (worker i gets bodiesByWorker[i % length]), e.g. disjoint sessions so two workers never write the same one. */
  readonly bodiesByWorker?: readonly (readonly Uint8Array[])[];
  readonly pgUrl?: string;
  /** Total pg connections over all workers. */
  readonly pgPoolMax?: number;
  /** Statements of one transaction (between BEGIN and COMMIT). */
  readonly pgStatements?: readonly string[];
  /** Total HTTP/2 connections over all workers (default 4). */
  readonly connections?: number;
  /** Total requests in flight (default 64). */
  readonly concurrency?: number;
  /** Worker processes (default 2: the machine has 2 cores). */
  readonly workers?: number;
  readonly warmupMs?: number;
  readonly durationMs?: number;
  /** Count mode: exactly this many requests, as fast as the concurrency allows; no warm-up. */
  readonly totalRequests?: number;
}

export interface LoadResult {
  readonly kind: LoadKind;
  readonly path: string | undefined;
  readonly workers: number;
  readonly connections: number;
  readonly concurrency: number;
  readonly requests: number;
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  readonly seconds: number;
  /** Completed requests (successes and errors) per second over the measured window. */
  readonly throughput: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
  readonly meanMs: number;
  /** Generator CPU over the run (warm-up included), in cores: sum over workers of cpu time / wall time. */
  readonly generatorCores: number;
}

const WORKER = new URL("./worker.ts", import.meta.url);

function split(total: number, parts: number, i: number): number {
  return Math.floor(total / parts) + (i < total % parts ? 1 : 0);
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const workers = spec.workers ?? 2;
  const connections = spec.connections ?? 4;
  const concurrency = spec.concurrency ?? 64;
  const pgPoolMax = spec.pgPoolMax ?? concurrency;
  const children: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  const results: Promise<WorkerResult>[] = [];
  try {
    for (let i = 0; i < workers; i++) {
      const child = fork(WORKER, [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
      children.push(child);
      const workerSpec: WorkerSpec = {
        kind: spec.kind,
        url: spec.url,
        path: spec.path,
        bodies: (spec.bodiesByWorker?.[i % spec.bodiesByWorker.length] ?? spec.bodies)?.map((b) => Buffer.from(b).toString("base64")),
        pgUrl: spec.pgUrl,
        pgPoolMax: Math.max(1, split(pgPoolMax, workers, i)),
        pgStatements: spec.pgStatements,
        connections: Math.max(1, split(connections, workers, i)),
        concurrency: Math.max(1, split(concurrency, workers, i)),
        warmupMs: spec.warmupMs ?? 1_500,
        durationMs: spec.durationMs ?? 4_000,
        totalRequests: spec.totalRequests === undefined ? undefined : split(spec.totalRequests, workers, i),
        index: i,
      };
      let onReady: () => void = () => {};
      ready.push(new Promise<void>((r) => (onReady = r)));
      results.push(
        new Promise<WorkerResult>((resolve, reject) => {
          child.on("message", (msg: FromWorker) => {
            if (msg.type === "ready") onReady();
            else if (msg.type === "result") resolve(msg.result);
            else reject(new Error(`load worker ${i} failed: ${msg.error}`));
          });
          child.once("exit", (code) => reject(new Error(`load worker ${i} exited with ${code} before reporting`)));
        }),
      );
      child.send({ type: "spec", spec: workerSpec } satisfies ToWorker);
    }
    // A worker that fails while connecting rejects its result; surface that instead of hanging.
    await Promise.race([Promise.all(ready), Promise.all(results)]);
    for (const c of children) c.send({ type: "go" } satisfies ToWorker);
    const all = await Promise.all(results);
    return merge(spec, workers, connections, concurrency, all);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill();
  }
}

function merge(spec: LoadSpec, workers: number, connections: number, concurrency: number, all: readonly WorkerResult[]): LoadResult {
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  const errorKinds: Record<string, number> = {};
  let requests = 0;
  let errors = 0;
  let seconds = 0;
  for (const r of all) {
    histogram.add(hdr.decodeFromCompressedBase64(r.histogram));
    requests += r.requests;
    errors += r.errors;
    seconds = Math.max(seconds, r.elapsedMs / 1000);
    for (const [k, n] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
  }
  // Throughput: sum of per-worker rates (each worker measured its own window).
  const throughput = all.reduce((sum, r) => sum + (r.elapsedMs > 0 ? r.requests / (r.elapsedMs / 1000) : 0), 0);
  const ms = (us: number) => Math.round(us) / 1000;
  return {
    kind: spec.kind,
    path: spec.path,
    workers,
    connections: spec.kind === "pg" ? spec.pgPoolMax ?? concurrency : connections,
    concurrency,
    requests,
    errors,
    errorKinds,
    seconds: Math.round(seconds * 1000) / 1000,
    throughput: Math.round(throughput),
    p50Ms: ms(histogram.getValueAtPercentile(50)),
    p99Ms: ms(histogram.getValueAtPercentile(99)),
    p999Ms: ms(histogram.getValueAtPercentile(99.9)),
    maxMs: ms(histogram.maxValue),
    meanMs: Math.round(histogram.mean) / 1000,
    generatorCores: Math.round(100 * all.reduce((sum, r) => sum + r.cpuMs, 0) / ((spec.totalRequests === undefined ? spec.warmupMs ?? 1_500 : 0) + seconds * 1000 || 1)) / 100,
  };
}

export function describeLoad(r: LoadResult): string {
  const errs = r.errors > 0 ? `  ERRORS ${r.errors} ${JSON.stringify(r.errorKinds)}` : "";
  return `${r.throughput.toLocaleString("en-US")} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  p99.9 ${r.p999Ms} ms  (${r.requests} req in ${r.seconds}s, ${r.concurrency} in flight / ${r.connections} conn / ${r.workers} workers, generator ${r.generatorCores} cores)${errs}`;
}
