/**
 * Event delivery past one process: NATS does the fan-out. Berth with NATS_URL (its relay
 * publishes every stored event to JetStream, subjects `berth.<kind>.<repo_id>`, on a fresh
 * stream BERTH_NATS_STREAM=BENCH_<random>, deleted afterwards); BENCH_NATS_FANOUT_SUBSCRIBERS
 * (default 1,000) core-NATS subscriptions on `berth.>` in 2 subscriber processes
 * (bench/loadgen/nats-sub-worker.ts) over BENCH_NATS_FANOUT_CONNECTIONS (default 20) NATS
 * connections; a paced open-loop producer stores BENCH_NATS_FANOUT_RATE (default 500) events/s
 * (CreateWorkspace over 32 repositories). Latency: the producer's client send time (stamped in
 * agent_id) → receipt at each subscription, one machine clock; it includes the RPC's commit
 * and the relay's publish. Baseline, same server, run first: the same producer with a single
 * subscription (the commit → NATS path without the fan-out).
 */
import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createBenchDatabase } from "../lib/database.js";
import { produceEvents, startWatchers, type Latencies, type Produced } from "../lib/events.js";
import { registerRepository } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import type { Row, Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";

const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const SUBSCRIBERS = Number(process.env.BENCH_NATS_FANOUT_SUBSCRIBERS ?? 1_000);
const CONNECTIONS = Number(process.env.BENCH_NATS_FANOUT_CONNECTIONS ?? 20);
const RATE = Number(process.env.BENCH_NATS_FANOUT_RATE ?? 500);
const REPOSITORIES = 32;
const TARGET_MS = 25;
const DRAIN_MS = 5_000;
/** Unmeasured production before the first measurement (watch-events does the same). */
const SERVER_WARMUP_MS = 4_000;
const SERVER_WARMUP_RATE = 100;
const WORKER = new URL("../loadgen/nats-sub-worker.ts", import.meta.url);

interface Measured {
  produced: Produced;
  latency: Latencies;
  received: number;
  expected: number;
  errors: number;
  cores: number;
  total: number;
  perSecond: number;
  errorKinds: Record<string, number>;
}

export const scenario: Scenario = {
  name: "nats-fanout",
  title: `Event delivery by NATS fan-out: ${SUBSCRIBERS.toLocaleString("en-US")} core-NATS subscribers on berth.>, ${RATE} events/s`,
  async run(ctx) {
    const stream = `BENCH_${randomBytes(4).toString("hex")}`;
    const nc = await connect({ servers: NATS_URL });
    const jsm = await jetstreamManager(nc);
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir, env: { NATS_URL, BERTH_NATS_STREAM: stream } });
    const extra: Record<string, unknown> = { stream };
    try {
      const client = new RpcClient(berth.grpcUrl);
      const repoIds: string[] = [];
      for (let i = 0; i < REPOSITORIES; i++) repoIds.push(await registerRepository(client, `bench-nf-${Date.now()}-${i}`));
      client.close();
      // The relay creates the stream at start (leader); wait for it, so publishing has begun.
      for (let i = 0; ; i++) {
        try {
          await jsm.streams.info(stream);
          break;
        } catch (err) {
          if (i > 100) throw new Error(`stream ${stream} not created by Berth's relay: ${(err as Error).message}`, { cause: err });
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const measure = async (label: string, subscriptions: number, connections: number, workers: number): Promise<Measured> => {
        const marker = `evbnf${label.replace(/[^a-z0-9]/gi, "")}-`;
        const w = await startWatchers({ url: NATS_URL, path: "berth.>", body: new Uint8Array(), streams: subscriptions, connections, workers, marker, worker: WORKER });
        try {
          const produced = await produceEvents({ url: berth.grpcUrl, repoIds, rate: RATE, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs, marker });
          const expected = produced.inWindow * subscriptions;
          // What is still in flight at the end of production gets DRAIN_MS to arrive, then is counted missing.
          const wallStart = performance.now() - ctx.warmupMs - ctx.durationMs;
          await new Promise((res) => setTimeout(res, DRAIN_MS));
          const r = await w.collect(produced.fromUs, produced.toUs, expected);
          const perSecond = Math.round(r.total / ((performance.now() - wallStart) / 1000));
          ctx.log(
            `${label}: ${subscriptions} subscriptions / ${connections} conn; sent ${produced.rate}/s (asked ${RATE}/s), the server completed ${produced.completedRate}/s (${produced.errors} errors, CreateWorkspace p50 ${produced.rpc.p50Ms} p99 ${produced.rpc.p99Ms} ms); ` +
              `delivered ${r.received}/${expected} (${r.missing} missing, counted at the cut-off); latency p50 ${r.latency.p50Ms} p99 ${r.latency.p99Ms} p99.9 ${r.latency.p999Ms} max ${r.latency.maxMs} ms; ${r.total} messages in all (${perSecond}/s); subscriber processes ${r.workerCores} cores; ${r.errors} errors ${JSON.stringify(r.errorKinds)}`,
          );
          const m: Measured = { produced, latency: r.latency, received: r.received, expected, errors: r.errors, cores: r.workerCores, total: r.total, perSecond, errorKinds: r.errorKinds };
          extra[label] = { subscriptions, connections, ...m };
          return m;
        } finally {
          w.stop();
        }
      };
      // The server's first few hundred creates and publishes pay JIT compilation, pool connections and prepared
      // statements; at 500/s from a cold start the backlog they build carries into the measured window. Not counted.
      await produceEvents({ url: berth.grpcUrl, repoIds, rate: SERVER_WARMUP_RATE, warmupMs: 0, durationMs: SERVER_WARMUP_MS, marker: "warmnf" });
      const one = await measure("1 subscriber", 1, 1, 1);
      const many = await measure(`${SUBSCRIBERS} subscribers`, SUBSCRIBERS, CONNECTIONS, 2);
      const complete = many.expected > 0 && many.received >= many.expected;
      const producerBound = many.produced.completedRate < RATE * 0.95;
      const rows: Row[] = [
        {
          figure: `commit → core-NATS subscriber p99 (undelivered counted at the ${DRAIN_MS / 1000} s cut-off), ${SUBSCRIBERS.toLocaleString("en-US")} subscriptions on berth.> (${CONNECTIONS} conn), ${RATE} events/s from ${REPOSITORIES} repositories (CreateWorkspace send → receipt)`,
          value: many.latency.p99Ms,
          unit: "ms",
          baseline: { name: "same, 1 subscriber", value: one.latency.p99Ms, unit: "ms" },
          target: `p99 < ${TARGET_MS} ms, all delivered`,
          met: complete && !producerBound && many.latency.p99Ms < TARGET_MS,
          note:
            `${producerBound ? "PRODUCER-BOUND: " : ""}sent ${many.produced.rate}/s (asked ${RATE}/s), completed by Berth at ${many.produced.completedRate}/s (CreateWorkspace p50 ${many.produced.rpc.p50Ms} / p99 ${many.produced.rpc.p99Ms} ms, ${many.produced.errors} errors); ` +
            `delivered ${many.received.toLocaleString("en-US")} of ${many.expected.toLocaleString("en-US")}; latency p50 ${many.latency.p50Ms} / p99.9 ${many.latency.p999Ms} / max ${many.latency.maxMs} ms; ` +
            `${many.total.toLocaleString("en-US")} messages received (${many.perSecond.toLocaleString("en-US")}/s) by subscriber processes using ${many.cores} cores; ` +
            `1 subscriber: p50 ${one.latency.p50Ms} / p99 ${one.latency.p99Ms} ms, completed ${one.produced.completedRate}/s, delivered ${one.received}/${one.expected}`,
        },
      ];
      return {
        rows,
        commands: [berth.command, `subscribers: bench/loadgen/nats-sub-worker.ts (core NATS, subject berth.>, ${NATS_URL}); producer: CreateWorkspace open loop at ${RATE}/s over ${REPOSITORIES} repositories, 2 connections`],
        runs: {},
        extra,
      };
    } finally {
      await berth.stop();
      await db.drop();
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close();
    }
  },
};
