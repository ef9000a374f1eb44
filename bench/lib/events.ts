/**
 * Event-delivery measurement: a paced producer of stored events (CreateWorkspace, whose
 * session.created event row is written in the same transaction) that stamps each request
 * with its client send time in agent_id (`<marker><epoch µs>`), and WatchEvents subscriber
 * processes (bench/loadgen/watch-worker.ts) that read it back on receipt.
 * Latency = receipt at the subscriber − the producer's send time of the RPC, one machine clock
 * (performance.timeOrigin + performance.now() in each process).
 */
import { fork, type ChildProcess } from "node:child_process";
import { performance } from "node:perf_hooks";
import hdr from "hdr-histogram-js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { CREATE_WORKSPACE } from "./fixtures.js";
import { RpcClient } from "./rpc.js";

export const nowUs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Latencies {
  readonly count: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

export function latencies(h: hdr.Histogram): Latencies {
  const ms = (us: number) => Math.round(us) / 1000;
  return { count: h.totalCount, p50Ms: ms(h.getValueAtPercentile(50)), p99Ms: ms(h.getValueAtPercentile(99)), p999Ms: ms(h.getValueAtPercentile(99.9)), maxMs: ms(h.maxValue) };
}

export function newHistogram(): hdr.Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
}

export interface Produced {
  /** Events whose RPC succeeded and whose send time is inside the measured window. */
  readonly inWindow: number;
  readonly fromUs: number;
  readonly toUs: number;
  readonly sent: number;
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  /** Send rate of the RPCs of the measured window that succeeded, per second (the pacing). */
  readonly rate: number;
  /** Rate at which the server completed them: successes / (last response − first send), per second. */
  readonly completedRate: number;
  /** CreateWorkspace latency as the producer saw it (measured window). */
  readonly rpc: Latencies;
}

/**
 * Open-loop CreateWorkspace at `rate`/s for warmupMs + durationMs over `connections`
 * connections, spread over `repoIds`, each with a unique agent name (no per-repository agent
 * counter) and agent_id `<marker><send µs>`. Waits for every RPC to finish.
 */
export async function produceEvents(o: { url: string; repoIds: readonly string[]; rate: number; warmupMs: number; durationMs: number; marker: string; connections?: number }): Promise<Produced> {
  const clients = Array.from({ length: o.connections ?? 2 }, () => new RpcClient(o.url));
  const h = newHistogram();
  const errorKinds: Record<string, number> = {};
  let errors = 0;
  let inWindow = 0;
  let sent = 0;
  let ok = 0;
  let lastDone = 0;
  const inflight = new Set<Promise<void>>();
  const t0 = nowUs();
  const fromUs = t0 + o.warmupMs * 1000;
  const toUs = fromUs + o.durationMs * 1000;
  const intervalUs = 1e6 / o.rate;
  try {
    for (;;) {
      const now = nowUs();
      if (now >= toUs) break;
      while (t0 + sent * intervalUs <= now) {
        const i = sent++;
        const at = nowUs();
        const p = clients[i % clients.length]!
          .unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, {
            repoId: o.repoIds[i % o.repoIds.length]!,
            intent: "bench: event delivery",
            baseCommit: "main",
            mode: WorkspaceMode.EPHEMERAL,
            agentId: `${o.marker}${at}`,
            agentName: `ev-${o.marker.replace(/[^a-z0-9]/gi, "")}-${i}`,
          }, 30_000)
          .then(
            () => {
              ok++;
              lastDone = nowUs();
              if (at >= fromUs && at <= toUs) {
                inWindow++;
                h.recordValue(Math.max(1, nowUs() - at));
              }
            },
            (err: unknown) => {
              errors++;
              const k = String((err as Error).message).slice(0, 80);
              errorKinds[k] = (errorKinds[k] ?? 0) + 1;
            },
          )
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await sleep(1);
    }
    await Promise.all(inflight);
  } finally {
    for (const c of clients) c.close();
  }
  return { inWindow, fromUs, toUs, sent, errors, errorKinds, rate: Math.round(inWindow / (o.durationMs / 1000)), completedRate: Math.round(ok / Math.max(1e-3, (lastDone - t0) / 1e6)), rpc: latencies(h) };
}

export interface Watchers {
  /**
   * Collects arrivals of events sent in [fromUs, toUs] after waiting drainMs, and stops the
   * workers. With `expected` deliveries, each missing one is counted at the cut-off (finish
   * time − toUs, a lower bound of its latency), so the percentiles never improve by losing events.
   */
  finish(fromUs: number, toUs: number, drainMs: number, expected?: number): Promise<{ missing: number; latency: Latencies; received: number; total: number; wallMs: number; errors: number; errorKinds: Record<string, number>; streamsEnded: number; workerCores: number }>;
  stop(): void;
}

/**
 * Forks `workers` subscriber processes with `streams` WatchEvents streams in total over `connections` connections.
 * `worker`: another subscriber module speaking the same protocol (loadgen/nats-sub-worker.ts: `streams`
 * core-NATS subscriptions on the subject `path` at the NATS server `url`).
 */
export async function startWatchers(o: { url: string; path: string; body: Uint8Array; streams: number; connections: number; workers: number; marker: string; worker?: URL }): Promise<Watchers> {
  const children: ChildProcess[] = [];
  const results: Promise<{ received: number; inWindow: number; histogram: string; errors: number; errorKinds: Record<string, number>; streamsEnded: number; cpuMs: number }>[] = [];
  const ready: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < o.workers; i++) {
    const child = fork(o.worker ?? new URL("../loadgen/watch-worker.ts", import.meta.url), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    children.push(child);
    let onReady: () => void = () => {};
    let onFail: (e: Error) => void = () => {};
    ready.push(new Promise<void>((r, j) => ((onReady = r), (onFail = j))));
    results.push(
      new Promise((resolve, reject) => {
        child.on("message", (m: { type: string; error?: string }) => {
          if (m.type === "ready") onReady();
          else if (m.type === "failed") onFail(new Error(m.error));
          else if (m.type === "result") resolve(m as never);
        });
        child.once("exit", (code) => {
          onFail(new Error(`watch worker exited ${code}`));
          reject(new Error(`watch worker ${i} exited with ${code} before reporting`));
        });
      }),
    );
    const share = (total: number) => Math.floor(total / o.workers) + (i < total % o.workers ? 1 : 0);
    child.send({ type: "spec", spec: { url: o.url, path: o.path, connections: Math.max(1, share(o.connections)), streams: share(o.streams), body: Buffer.from(o.body).toString("base64"), marker: o.marker } });
  }
  await Promise.all(ready);
  void started;
  return {
    async finish(fromUs, toUs, drainMs, expected) {
      await sleep(drainMs);
      const cutoffUs = nowUs() - toUs;
      for (const c of children) c.send({ type: "finish", fromUs, toUs });
      const all = await Promise.all(results);
      const h = newHistogram();
      const errorKinds: Record<string, number> = {};
      for (const r of all) {
        h.add(hdr.decodeFromCompressedBase64(r.histogram));
        for (const [k, n] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
      }
      const wallMs = performance.now() - started;
      const got = all.reduce((n, r) => n + r.inWindow, 0);
      const missing = expected === undefined ? 0 : Math.max(0, expected - got);
      if (missing > 0) h.recordValueWithCount(Math.max(1, Math.round(cutoffUs)), missing);
      return {
        missing,
        latency: latencies(h),
        received: all.reduce((n, r) => n + r.inWindow, 0),
        total: all.reduce((n, r) => n + r.received, 0),
        wallMs,
        errors: all.reduce((n, r) => n + r.errors, 0),
        errorKinds,
        streamsEnded: all.reduce((n, r) => n + r.streamsEnded, 0),
        workerCores: Math.round((100 * all.reduce((n, r) => n + r.cpuMs, 0)) / wallMs) / 100,
      };
    },
    stop() {
      for (const c of children) if (c.exitCode === null) c.kill();
    },
  };
}
