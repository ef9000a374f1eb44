/**
 * Event delivery, commit → JetStream consumer: Berth with NATS_URL=nats://127.0.0.1:4222 and a
 * fresh stream (BERTH_NATS_STREAM=BENCH_<random>, deleted afterwards); a paced producer stores
 * BENCH_JS_RATE (default 100) events/s (CreateWorkspace, send time stamped in agent_id); an
 * ordered JetStream consumer in the harness process decodes each berth.v1.Event and records
 * receipt − the producer's send time (same clock). The note splits it into legs: send → the
 * event's occurred_at (RPC transit and handler, ms resolution), occurred_at → stored in the
 * stream (commit, pickup, numbering, outbox read, publish; the message's stream timestamp)
 * and stored → receipt (JetStream's push to the consumer).
 */
import { randomBytes } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { createBenchDatabase } from "../lib/database.js";
import { latencies, newHistogram, nowUs, produceEvents } from "../lib/events.js";
import { registerRepository } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import type { Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";

const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const RATE = Number(process.env.BENCH_JS_RATE ?? 100);
const TARGET_MS = 20;

export const scenario: Scenario = {
  name: "jetstream",
  title: `Event delivery, commit → JetStream consumer (${RATE} events/s)`,
  async run(ctx) {
    const stream = `BENCH_${randomBytes(4).toString("hex")}`;
    const nc = await connect({ servers: NATS_URL });
    const jsm = await jetstreamManager(nc);
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir, env: { NATS_URL, BERTH_NATS_STREAM: stream } });
    try {
      const client = new RpcClient(berth.grpcUrl);
      const repoIds: string[] = [];
      for (let i = 0; i < 16; i++) repoIds.push(await registerRepository(client, `bench-js-${Date.now()}-${i}`));
      client.close();
      // The relay creates the stream at start (leader); wait for it.
      for (let i = 0; ; i++) {
        try {
          await jsm.streams.info(stream);
          break;
        } catch (err) {
          if (i > 100) throw new Error(`stream ${stream} not created by Berth's relay: ${(err as Error).message}`, { cause: err });
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const marker = "evbjs-";
      /** [send µs, receipt µs, occurred_at µs, stored in the stream µs] per event of the producer. */
      const arrivals: [number, number, number, number][] = [];
      const consumer = await jetstream(nc).consumers.get(stream, { deliver_policy: "new" as never });
      const messages = await consumer.consume();
      // Consumed alongside the producer, not awaited here: the loop ends when messages.close()
      // below closes the consumer. A failure (a message that does not decode) is kept and rethrown
      // once the consumer is closed, rather than left as an unhandled rejection.
      let consumeError: unknown;
      void (async () => {
        for await (const m of messages) {
          const t = nowUs();
          const ev = fromBinary(EventSchema, m.data);
          if (!ev.agentId.startsWith(marker)) continue;
          const occurredUs = ev.occurredAt ? Number(ev.occurredAt.seconds) * 1e6 + Math.round(ev.occurredAt.nanos / 1000) : t;
          arrivals.push([Number(ev.agentId.slice(marker.length)), t, occurredUs, Math.round(m.info.timestampNanos / 1000)]);
        }
      })().catch((err: unknown) => {
        consumeError = err;
      });
      await new Promise((r) => setTimeout(r, 300));
      const produced = await produceEvents({ url: berth.grpcUrl, repoIds, rate: RATE, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs, marker });
      await new Promise((r) => setTimeout(r, 3_000));
      await messages.close();
      if (consumeError !== undefined) throw new Error("the JetStream consumer failed", { cause: consumeError });
      const h = newHistogram();
      const legs = { handler: newHistogram(), publish: newHistogram(), push: newHistogram() };
      let received = 0;
      for (const [s, t, occurred, stored] of arrivals) {
        if (s >= produced.fromUs && s <= produced.toUs) {
          received++;
          h.recordValue(Math.max(1, t - s));
          legs.handler.recordValue(Math.max(1, occurred - s));
          legs.publish.recordValue(Math.max(1, stored - occurred));
          legs.push.recordValue(Math.max(1, t - stored));
        }
      }
      const l = latencies(h);
      const leg = (x: ReturnType<typeof newHistogram>) => {
        const v = latencies(x);
        return `p50 ${v.p50Ms} / p99 ${v.p99Ms} ms`;
      };
      const legNote = `legs: send → occurred_at ${leg(legs.handler)}; occurred_at → stored in the stream ${leg(legs.publish)}; stored → consumer ${leg(legs.push)}`;
      const complete = received >= produced.inWindow && produced.inWindow > 0;
      ctx.log(`sent ${produced.rate}/s, completed ${produced.completedRate}/s (CreateWorkspace p50 ${produced.rpc.p50Ms} p99 ${produced.rpc.p99Ms} ms, ${produced.errors} errors); consumed ${received}/${produced.inWindow}; latency p50 ${l.p50Ms} p99 ${l.p99Ms} max ${l.maxMs} ms; ${legNote}`);
      return {
        rows: [
          {
            figure: `commit → JetStream consumer p99, ${RATE} events/s (CreateWorkspace send → consumer receipt)`,
            value: l.p99Ms,
            unit: "ms",
            baseline: { name: "CreateWorkspace RPC p99 (send → response)", value: produced.rpc.p99Ms, unit: "ms" },
            target: `p99 < ${TARGET_MS} ms, all delivered`,
            met: complete && l.p99Ms < TARGET_MS,
            note: `stream ${stream} (deleted after); consumed ${received} of ${produced.inWindow}; p50 ${l.p50Ms} / p99.9 ${l.p999Ms} / max ${l.maxMs} ms; RPC p50 ${produced.rpc.p50Ms} ms; sent ${produced.rate}/s, completed ${produced.completedRate}/s; ${legNote}`,
          },
        ],
        commands: [berth.command, `consumer: ordered JetStream consumer on ${stream} at ${NATS_URL} (deliver new), in the harness process`],
        runs: {},
        extra: { produced, latency: l, received, stream },
      };
    } finally {
      await berth.stop();
      await db.drop();
      await jsm.streams.delete(stream).catch(() => {});
      await nc.close();
    }
  },
};
