/**
 * Event-delivery measurement: a paced producer of stored events (CreateWorkspace, whose
 * session.created event row is written in the same transaction) that stamps each request
 * with its client send time in agent_id (`<marker><epoch µs>`), and WatchEvents subscriber
 * processes (bench/loadgen/watch-worker.ts) that read it back on receipt.
 * Latency = receipt at the subscriber − the producer's send time of the RPC, one machine clock
 * (performance.timeOrigin + performance.now() in each process).
 */
import { fork, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import hdr from "hdr-histogram-js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { create, toBinary } from "@bufbuild/protobuf";
import { CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, WatchEventsResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";
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

/** One producing RPC: `agentId` (`<marker><send µs>`) must reach the event the subscribers get. */
export type ProduceCall = (client: RpcClient, i: number, agentId: string) => Promise<unknown>;

/** CreateWorkspace in repository i mod repoIds.length, each with a unique agent name (no per-repository agent counter). */
export function createWorkspaceCall(repoIds: readonly string[], marker: string): ProduceCall {
  const tag = marker.replace(/[^a-z0-9]/gi, "");
  return (client, i, agentId) =>
    client.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, {
      repoId: repoIds[i % repoIds.length]!,
      intent: "bench: event delivery",
      baseCommit: "main",
      mode: WorkspaceMode.EPHEMERAL,
      agentId,
      agentName: `ev-${tag}-${i}`,
    }, 30_000);
}

/**
 * Open-loop producer at `rate`/s for warmupMs + durationMs over `connections` connections,
 * each RPC stamped with agent_id `<marker><send µs>`: CreateWorkspace over `repoIds` unless
 * `call` says otherwise. Waits for every RPC to finish.
 */
export async function produceEvents(o: { url: string; repoIds: readonly string[]; rate: number; warmupMs: number; durationMs: number; marker: string; connections?: number; call?: ProduceCall }): Promise<Produced> {
  const clients = Array.from({ length: o.connections ?? 2 }, () => new RpcClient(o.url));
  const call = o.call ?? createWorkspaceCall(o.repoIds, o.marker);
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
        const p = call(clients[i % clients.length]!, i, `${o.marker}${at}`)
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

/** The bare streaming server's trigger (bench/servers/bare-stream.ts): its request is the message every stream gets. */
export const BARE_PUBLISH = "/bench.BareStream/Publish";
export const BARE_WATCH = "/bench.BareStream/Watch";

/**
 * Publish to the bare server a WatchEventsResponse shaped like Berth's session.created (ids,
 * kind, timestamp, payload), its reason padded so that the message is `bytes` long.
 */
export function barePublishCall(size: () => number): ProduceCall {
  const id = "0b1c5e8e-4a3b-4f7e-9d2a-6c1e2f3a4b5c";
  const message = (agentId: string, pad: number) =>
    create(WatchEventsResponseSchema, {
      event: {
        seq: 123_456n,
        id,
        kind: "session.created",
        repoId: id,
        sessionId: id,
        workspaceId: id,
        agentId,
        changesetId: id,
        occurredAt: { seconds: 1_796_000_000n, nanos: 123_000_000 },
        reason: "x".repeat(pad),
        payload: { case: "sessionCreated", value: { agentName: "ev-bench-0000", mode: WorkspaceMode.EPHEMERAL, intent: "bench: event delivery", baseCommit: "main" } },
      },
    });
  return (client, _i, agentId) => {
    const bytes = size();
    let pad = Math.max(0, bytes - toBinary(WatchEventsResponseSchema, message(agentId, 0)).length - 2);
    while (pad > 0 && toBinary(WatchEventsResponseSchema, message(agentId, pad)).length > bytes) pad--;
    return client.unary(BARE_PUBLISH, WatchEventsResponseSchema, WatchEventsResponseSchema, message(agentId, pad), 30_000);
  };
}

/** CPU time (user + system) a process has used, in ms, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** What the subscribers got between two collects. */
export interface Collected {
  /** Deliveries of events sent in the window that are missing at the cut-off. */
  readonly missing: number;
  /** Latency of the window's events; each missing one counted at the cut-off (a lower bound). */
  readonly latency: Latencies;
  /** Deliveries of events sent in the window. */
  readonly received: number;
  /** Every event message received since the last collect (warm-up included). */
  readonly total: number;
  /** Mean size of those messages, bytes (without the 5-byte gRPC prefix). */
  readonly meanBytes: number;
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  readonly streamsEnded: number;
  /** Subscriber processes' CPU since the last collect, cores. */
  readonly workerCores: number;
}

export interface Watchers {
  /**
   * Collects the arrivals of events sent in [fromUs, toUs] (the workers keep their streams and
   * forget what they reported). With `expected` deliveries, each missing one is counted at the
   * cut-off (now − toUs), so the percentiles never improve by losing events.
   */
  collect(fromUs: number, toUs: number, expected?: number): Promise<Collected>;
  stop(): void;
}

type WorkerReport = { received: number; inWindow: number; bytes: number; histogram: string; errors: number; errorKinds: Record<string, number>; streamsEnded: number; cpuMs: number };

/**
 * Forks `workers` subscriber processes with `streams` server streams in total over `connections` connections.
 * `worker`: another subscriber module speaking the same protocol (loadgen/nats-sub-worker.ts: `streams`
 * core-NATS subscriptions on the subject `path` at the NATS server `url`).
 */
export async function startWatchers(o: { url: string; path: string; body: Uint8Array; streams: number; connections: number; workers: number; marker: string; worker?: URL }): Promise<Watchers> {
  const children: ChildProcess[] = [];
  const waiting: ((r: WorkerReport) => void)[] = [];
  const ready: Promise<void>[] = [];
  const exited: Promise<never>[] = [];
  for (let i = 0; i < o.workers; i++) {
    const child = fork(o.worker ?? new URL("../loadgen/watch-worker.ts", import.meta.url), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
    children.push(child);
    let onReady: () => void = () => {};
    let onFail: (e: Error) => void = () => {};
    ready.push(new Promise<void>((r, j) => ((onReady = r), (onFail = j))));
    child.on("message", (m: { type: string; error?: string } & WorkerReport) => {
      if (m.type === "ready") onReady();
      else if (m.type === "failed") onFail(new Error(m.error));
      else if (m.type === "result") waiting[i]?.(m);
    });
    exited.push(
      new Promise<never>((_, reject) =>
        child.once("exit", (code) => {
          onFail(new Error(`watch worker exited ${code}`));
          reject(new Error(`watch worker ${i} exited with ${code}`));
        }),
      ),
    );
    exited[i]!.catch(() => {}); // reported by the collect that waits on it
    const share = (total: number) => Math.floor(total / o.workers) + (i < total % o.workers ? 1 : 0);
    child.send({ type: "spec", spec: { url: o.url, path: o.path, connections: Math.max(1, share(o.connections)), streams: share(o.streams), body: Buffer.from(o.body).toString("base64"), marker: o.marker } });
  }
  await Promise.all(ready);
  let since = performance.now();
  let stopped = false;
  return {
    async collect(fromUs, toUs, expected) {
      const cutoffUs = nowUs() - toUs;
      const all = await Promise.all(
        children.map((c, i) => {
          const r = new Promise<WorkerReport>((resolve) => (waiting[i] = resolve));
          c.send({ type: "collect", fromUs, toUs });
          return Promise.race([r, exited[i]!]);
        }),
      );
      const wallMs = performance.now() - since;
      since = performance.now();
      const h = newHistogram();
      const errorKinds: Record<string, number> = {};
      for (const r of all) {
        h.add(hdr.decodeFromCompressedBase64(r.histogram));
        for (const [k, n] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
      }
      const got = all.reduce((n, r) => n + r.inWindow, 0);
      const missing = expected === undefined ? 0 : Math.max(0, expected - got);
      if (missing > 0) h.recordValueWithCount(Math.max(1, Math.round(cutoffUs)), missing);
      const total = all.reduce((n, r) => n + r.received, 0);
      return {
        missing,
        latency: latencies(h),
        received: got,
        total,
        meanBytes: total === 0 ? 0 : Math.round(all.reduce((n, r) => n + r.bytes, 0) / total),
        errors: all.reduce((n, r) => n + r.errors, 0),
        errorKinds,
        streamsEnded: all.reduce((n, r) => n + r.streamsEnded, 0),
        workerCores: Math.round((100 * all.reduce((n, r) => n + r.cpuMs, 0)) / wallMs) / 100,
      };
    },
    stop() {
      if (stopped) return;
      stopped = true;
      for (const c of children) if (c.exitCode === null) c.kill();
    },
  };
}
