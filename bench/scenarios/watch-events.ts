/**
 * WatchEvents fan-out against the stack's limit (issue 16): Berth and a bare grpc-js server
 * (bench/servers/bare-stream.ts: one pre-encoded message written to every open stream), side by
 * side, at N = 100 and N = 1,000 subscribers (server streams opened from 2 subscriber processes
 * over 4 HTTP/2 connections, bench/loadgen/watch-worker.ts).
 *
 * Events: on Berth, CreateWorkspace over 20 repositories (its session.created is the event; the
 * streams ask for kinds session.created after the current last seq); on the bare server, a unary
 * Publish whose request is the message to fan out, a WatchEventsResponse of Berth's size. Both
 * from the same paced open-loop producer, 2 connections, each RPC stamped with its send time in
 * agent_id. Latency: producer's send → receipt at each subscriber (one machine clock), so
 * Berth's includes the create's commit and the hub's read.
 *
 * The rate steps up (25, 50, 100, … 1,200 events/s), alternating Berth and bare at each step,
 * each server stopping at its first failing step. A step holds when every delivery of an event
 * sent in its window arrived by the cut-off (500 ms after the producer's last RPC finished),
 * its p99 is < 25 ms, and no stream or RPC failed. The row's value is the highest rate held;
 * the ratio is Berth's / bare's. Server CPU µs per delivered message is from /proc over each
 * step (the producer's RPCs included, for both).
 */
import { frame } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { BARE_WATCH, barePublishCall, processCpuMs, produceEvents, startWatchers, type Collected, type Produced, type Watchers } from "../lib/events.js";
import { registerRepository, SERVICE } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { type Row, type Scenario } from "../lib/scenario.js";
import { startBareStream, startBerth, type ServerProcess } from "../lib/servers.js";
import { WatchEventsRequestSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { HealthCheckRequestSchema } from "../../gen/grpc/health/v1/health_pb.js";

const list = (v: string | undefined, d: readonly number[]) => (v ? v.split(",").map(Number) : d);
const SUBSCRIBERS = list(process.env.BENCH_WATCH_SUBSCRIBERS, [100, 1_000]);
const RATES = list(process.env.BENCH_WATCH_RATES, [25, 50, 100, 200, 400, 800, 1_200]);
const STEP_MS = Number(process.env.BENCH_WATCH_STEP_MS ?? 2_000);
const WARMUP_MS = Number(process.env.BENCH_WATCH_WARMUP_MS ?? 300);
/**
 * Before each ladder, both servers serve this many ms of events at SERVER_WARMUP_RATE to the
 * ladder's subscribers, not counted: a server's first few hundred calls after its start pay JIT
 * compilation, pool connections and prepared statements (a CreateWorkspace's p99 over its first
 * 200 calls was 26 ms against 11-14 ms after, on a quiet machine), and a step of 50 events is
 * judged by its slowest one.
 */
const SERVER_WARMUP_MS = Number(process.env.BENCH_WATCH_SERVER_WARMUP_MS ?? 4_000);
const SERVER_WARMUP_RATE = 50;
/** The bare server's message size; by default Berth's own (its first step's mean), else 336. */
const BYTES = process.env.BENCH_WATCH_BYTES ? Number(process.env.BENCH_WATCH_BYTES) : undefined;
const CONNECTIONS = Number(process.env.BENCH_WATCH_CONNECTIONS ?? 4);
const REPOSITORIES = 20;
const CUTOFF_MS = 500;
/** Berth's server CPU per delivered message against the bare server's (issue 30). */
const CPU_RATIO = 1.5;
const TARGET_MS = 25;

interface Step {
  readonly rate: number;
  readonly held: boolean;
  readonly produced: Produced;
  readonly got: Collected;
  readonly expected: number;
  /** Server CPU per message the subscribers received in the step, µs. */
  readonly cpuUsPerMessage: number;
}

interface Side {
  readonly name: "berth" | "bare";
  readonly server: ServerProcess;
  readonly url: string;
  readonly path: string;
  /** The request each stream sends, given the head of Berth's outbox. */
  readonly body: (lastSeq: bigint) => Uint8Array;
  readonly produce: Parameters<typeof produceEvents>[0]["call"];
  readonly repoIds: readonly string[];
}

/** The producer's agent_id prefix, its send µs following: the subscribers find it in the message bytes. */
const markerOf = (side: string, n: number) => `evb${side}${n}x`;

const fmt = (s: Step) =>
  `${s.rate}/s ${s.held ? "held" : "FAILED"}: sent ${s.produced.rate}/s, RPC p50 ${s.produced.rpc.p50Ms} p99 ${s.produced.rpc.p99Ms} ms (${s.produced.errors} errors); ` +
  `delivered ${s.got.received}/${s.expected}; p50 ${s.got.latency.p50Ms} p99 ${s.got.latency.p99Ms} max ${s.got.latency.maxMs} ms; ${s.got.total} messages of ${s.got.meanBytes} B; ` +
  `server ${s.cpuUsPerMessage} µs CPU/message; subscribers ${s.got.workerCores} cores; ${s.got.errors} stream errors ${JSON.stringify(s.got.errorKinds)}, ${s.got.streamsEnded} ended`;

async function step(side: Side, w: Watchers, n: number, rate: number): Promise<Step> {
  const marker = markerOf(side.name, n);
  const cpu0 = processCpuMs(side.server.pid);
  const produced = await produceEvents({ url: side.url, repoIds: side.repoIds, rate, warmupMs: WARMUP_MS, durationMs: STEP_MS, marker, ...(side.produce ? { call: side.produce } : {}) });
  await new Promise((r) => setTimeout(r, CUTOFF_MS)); // the cut-off: what has not arrived by now is counted missing
  const expected = produced.inWindow * n;
  const got = await w.collect(produced.fromUs, produced.toUs, expected);
  const cpuMs = processCpuMs(side.server.pid) - cpu0;
  const held = got.missing === 0 && got.latency.p99Ms < TARGET_MS && got.errors === 0 && got.streamsEnded === 0 && produced.errors === 0 && expected > 0;
  return { rate, held, produced, got, expected, cpuUsPerMessage: got.total === 0 ? 0 : Math.round((cpuMs * 1000 * 10) / got.total) / 10 };
}

export const scenario: Scenario = {
  name: "watch-events",
  title: `WatchEvents fan-out vs a bare grpc-js server streaming pre-encoded messages, N = ${SUBSCRIBERS.map((n) => n.toLocaleString("en-US")).join(" and ")}`,
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const bare = await startBareStream();
    const extra: Record<string, unknown> = {};
    const rows: Row[] = [];
    try {
      const client = new RpcClient(berth.grpcUrl);
      const repoIds: string[] = [];
      for (let i = 0; i < REPOSITORIES; i++) repoIds.push(await registerRepository(client, `bench-events-${Date.now()}-${i}`));
      client.close();
      let bytes = BYTES ?? 336;
      const sides: Side[] = [
        { name: "berth", server: berth, url: berth.grpcUrl, path: `${SERVICE}/WatchEvents`, body: (afterSeq) => frame(WatchEventsRequestSchema, { afterSeq, kinds: ["session.created"] }), produce: undefined, repoIds },
        { name: "bare", server: bare, url: bare.grpcUrl, path: BARE_WATCH, body: () => frame(HealthCheckRequestSchema, {}), produce: barePublishCall(() => bytes), repoIds },
      ];
      for (const n of SUBSCRIBERS) {
        const lastSeq = BigInt((await db.query("SELECT coalesce(max(seq), 0)::text AS s FROM events")).rows[0].s as string);
        const watchers = await Promise.all(
          sides.map((s) =>
            startWatchers({
              url: s.url,
              path: s.path,
              body: s.body(lastSeq),
              streams: n,
              connections: CONNECTIONS,
              workers: 2,
              marker: markerOf(s.name, n),
            }),
          ),
        );
        const ladders: Step[][] = sides.map(() => []);
        try {
          for (const s of sides) {
            if (SERVER_WARMUP_MS > 0) await produceEvents({ url: s.url, repoIds: s.repoIds, rate: SERVER_WARMUP_RATE, warmupMs: 0, durationMs: SERVER_WARMUP_MS, marker: `warm${s.name}`, ...(s.produce ? { call: s.produce } : {}) });
          }
          await new Promise((r) => setTimeout(r, CUTOFF_MS));
          await Promise.all(watchers.map((w) => w.collect(0, 0))); // forget the set-up and the warm-up (and their CPU)
          for (const rate of RATES) {
            let any = false;
            for (let i = 0; i < sides.length; i++) {
              const ladder = ladders[i]!;
              if (ladder.length > 0 && !ladder.at(-1)!.held) continue;
              any = true;
              const s = await step(sides[i]!, watchers[i]!, n, rate);
              ladder.push(s);
              if (BYTES === undefined && sides[i]!.name === "berth" && s.got.meanBytes > 0) bytes = s.got.meanBytes;
              ctx.log(`N=${n} ${sides[i]!.name} ${fmt(s)}`);
            }
            if (!any) break;
          }
        } finally {
          for (const w of watchers) w.stop();
        }
        const [b, a] = ladders as [Step[], Step[]];
        const best = (l: Step[]) => l.filter((s) => s.held).at(-1);
        const bb = best(b);
        const ab = best(a);
        const berthRate = bb?.rate ?? 0;
        const bareRate = ab?.rate ?? 0;
        // CPU per message compared at one load: the highest rate both held (else each one's first step).
        const common = [...b].reverse().find((s) => s.held && a.some((x) => x.rate === s.rate && x.held))?.rate ?? RATES[0]!;
        const at = (l: Step[]) => l.find((s) => s.rate === common);
        const saturated = b.find((s) => !s.held);
        const base = b[0];
        extra[`N=${n}`] = { berth: b, bare: a };
        rows.push({
          figure: `WatchEvents fan-out, ${n.toLocaleString("en-US")} subscribers (${CONNECTIONS} conn): highest rate held at p99 < ${TARGET_MS} ms, all delivered (events/s, stepped ${RATES.join(", ")})`,
          value: berthRate,
          unit: "events/s",
          baseline: { name: "bare grpc-js server streaming pre-encoded messages (bench/servers/bare-stream.ts)", value: bareRate, unit: "events/s" },
          ...(bareRate > 0 ? { ratio: Math.round((berthRate / bareRate) * 100) / 100 } : {}),
          target: "≥ 0.5× the bare server's rate",
          met: bareRate > 0 && berthRate >= 0.5 * bareRate,
          note:
            `Berth: ${bb ? `at ${bb.rate}/s p99 ${bb.got.latency.p99Ms} ms` : "held no step"}${saturated ? `; first failing step ${saturated.rate}/s: p99 ${saturated.got.latency.p99Ms} ms, delivered ${saturated.got.received}/${saturated.expected}` : ""}. ` +
            `Bare: ${ab ? `at ${ab.rate}/s p99 ${ab.got.latency.p99Ms} ms` : "held no step"}. ` +
            `Server CPU per delivered message at ${common}/s: Berth ${at(b)?.cpuUsPerMessage ?? "–"} µs, bare ${at(a)?.cpuUsPerMessage ?? "–"} µs. ` +
            `CreateWorkspace p50 on Berth: ${base ? `${base.produced.rpc.p50Ms} ms at ${base.rate}/s` : "–"}${saturated ? `, ${saturated.produced.rpc.p50Ms} ms at ${saturated.rate}/s (saturated)` : ""}. ` +
            `Messages: Berth ${bb?.got.meanBytes ?? base?.got.meanBytes ?? "–"} B, bare ${ab?.got.meanBytes ?? a[0]?.got.meanBytes ?? "–"} B.`,
        });
        const cb = at(b)?.cpuUsPerMessage;
        const ca = at(a)?.cpuUsPerMessage;
        if (cb !== undefined && ca !== undefined && ca > 0) {
          rows.push({
            figure: `WatchEvents fan-out, ${n.toLocaleString("en-US")} subscribers: server CPU per delivered message at ${common} events/s`,
            value: cb,
            unit: "µs",
            baseline: { name: "bare grpc-js server, same rate and N", value: ca, unit: "µs" },
            ratio: Math.round((cb / ca) * 100) / 100,
            target: `ratio ≤ ${CPU_RATIO} (issue 30)`,
            met: cb <= CPU_RATIO * ca,
          });
        }
      }
      return {
        rows,
        commands: [
          berth.command,
          bare.command,
          `subscribers: bench/loadgen/watch-worker.ts (2 processes, ${CONNECTIONS} connections); producer: CreateWorkspace over ${REPOSITORIES} repositories / bare Publish of ${BYTES ?? "Berth's message size in"} B, open loop, 2 connections; steps ${WARMUP_MS} + ${STEP_MS} ms`,
        ],
        runs: {},
        extra,
      };
    } finally {
      await Promise.all([berth.stop(), bare.stop()]);
      await db.drop();
    }
  },
};
