/**
 * Event delivery, commit → WatchEvents subscriber: 1,000 WatchEvents streams (kinds
 * session.created, after the current last seq) opened from 2 subscriber processes over 4
 * HTTP/2 connections (250 streams each), while a paced open-loop producer stores 500
 * events/s (CreateWorkspace over 16 repositories, each with its session.created event row).
 * Latency: the producer's client send time of the CreateWorkspace (stamped in agent_id) →
 * receipt at each subscriber, same machine clock; so it includes the RPC and its commit.
 * Diagnostic, same server, run first: the same producer with a single subscriber (the
 * commit → delivery path without the fan-out).
 */
import { describeLoad } from "../loadgen/index.js";
import { frame } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { produceEvents, startWatchers, type Latencies, type Produced } from "../lib/events.js";
import { registerRepository, SERVICE } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { type Row, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { WatchEventsRequestSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const SUBSCRIBERS = Number(process.env.BENCH_WATCH_SUBSCRIBERS ?? 1_000);
const RATE = Number(process.env.BENCH_WATCH_RATE ?? 500);
const TARGET_MS = 25;
void describeLoad;

export const scenario: Scenario = {
  name: "watch-events",
  title: `Event delivery, commit → WatchEvents subscriber: ${SUBSCRIBERS.toLocaleString("en-US")} subscribers, ${RATE} events/s`,
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const extra: Record<string, unknown> = {};
    try {
      const client = new RpcClient(berth.grpcUrl);
      const repoIds: string[] = [];
      for (let i = 0; i < 16; i++) repoIds.push(await registerRepository(client, `bench-events-${Date.now()}-${i}`));
      client.close();
      const measure = async (label: string, streams: number, connections: number, workers: number): Promise<{ produced: Produced; latency: Latencies; received: number; expected: number; errors: number; cores: number; total: number; perSecond: number }> => {
        const lastSeq = BigInt((await db.query("SELECT coalesce(max(seq), 0)::text AS s FROM events")).rows[0].s as string);
        const marker = `evb${label.replace(/[^a-z0-9]/gi, "")}-`;
        const body = frame(WatchEventsRequestSchema, { afterSeq: lastSeq, kinds: ["session.created"] });
        const w = await startWatchers({ url: berth.grpcUrl, path: `${SERVICE}/WatchEvents`, body, streams, connections, workers, marker });
        try {
          await new Promise((r) => setTimeout(r, 500)); // let every stream reach its live phase
          const produced = await produceEvents({ url: berth.grpcUrl, repoIds, rate: RATE, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs, marker });
          const expected = produced.inWindow * streams;
          const r = await w.finish(produced.fromUs, produced.toUs, 5_000, expected);
          // Fan-out capacity: every event message the subscribers got (warm-up included), per second of the run.
          const perSecond = Math.round(r.total / (r.wallMs / 1000));
          ctx.log(
            `${label}: ${streams} streams / ${connections} conn; sent ${produced.rate}/s (target ${RATE}/s), the server completed ${produced.completedRate}/s ( ${produced.errors} errors, CreateWorkspace p50 ${produced.rpc.p50Ms} p99 ${produced.rpc.p99Ms} ms); ` +
              `delivered ${r.received}/${expected} (${r.missing} missing, counted at the cut-off); latency p50 ${r.latency.p50Ms} p99 ${r.latency.p99Ms} p99.9 ${r.latency.p999Ms} max ${r.latency.maxMs} ms; ${r.total} messages received in all (${perSecond}/s over ${Math.round(r.wallMs / 1000)} s); subscriber processes ${r.workerCores} cores; ${r.errors} stream errors ${JSON.stringify(r.errorKinds)}, ${r.streamsEnded} streams ended`,
          );
          extra[label] = { streams, connections, produced, latency: r.latency, received: r.received, expected, total: r.total, perSecond, errors: r.errors, errorKinds: r.errorKinds, streamsEnded: r.streamsEnded, subscriberCores: r.workerCores };
          return { produced, latency: r.latency, received: r.received, expected, errors: r.errors, cores: r.workerCores, total: r.total, perSecond };
        } finally {
          w.stop();
        }
      };
      const one = await measure("1 subscriber", 1, 1, 1);
      const many = await measure(`${SUBSCRIBERS} subscribers`, SUBSCRIBERS, Math.max(1, Math.ceil(SUBSCRIBERS / 250)), 2);
      const complete = many.expected > 0 && many.received >= many.expected * 0.999;
      const rows: Row[] = [
        {
          figure: `commit → WatchEvents p99 (undelivered counted at the 5 s cut-off: then a lower bound), ${SUBSCRIBERS.toLocaleString("en-US")} subscribers (${Math.ceil(SUBSCRIBERS / 250)} conn), ${RATE} events/s (CreateWorkspace send → receipt)`,
          value: many.latency.p99Ms,
          unit: "ms",
          baseline: { name: "same, 1 subscriber", value: one.latency.p99Ms, unit: "ms" },
          target: `p99 < ${TARGET_MS} ms, all delivered`,
          met: complete && many.latency.p99Ms < TARGET_MS,
          note:
            `sent ${many.produced.rate}/s (asked ${RATE}/s), completed by the server at ${many.produced.completedRate}/s ( CreateWorkspace p50 ${many.produced.rpc.p50Ms} / p99 ${many.produced.rpc.p99Ms} ms); delivered ${many.received.toLocaleString("en-US")} of ${many.expected.toLocaleString("en-US")} within 5 s after the last commit; ` +
            `latency p50 ${many.latency.p50Ms} / p99.9 ${many.latency.p999Ms} / max ${many.latency.maxMs} ms; subscriber processes used ${many.cores} cores; the subscribers received ${many.total.toLocaleString("en-US")} event messages in all, ${many.perSecond.toLocaleString("en-US")}/s (fan-out rate). ` +
            `1 subscriber: p50 ${one.latency.p50Ms} / p99 ${one.latency.p99Ms} ms, sent ${one.produced.rate}/s, completed ${one.produced.completedRate}/s, delivered ${one.received}/${one.expected}`,
        },
      ];
      return { rows, commands: [berth.command, `subscribers: bench/loadgen/watch-worker.ts; producer: CreateWorkspace open loop at ${RATE}/s over 16 repositories, 2 connections`], runs: {}, extra };
    } finally {
      await berth.stop();
      await db.drop();
    }
  },
};
