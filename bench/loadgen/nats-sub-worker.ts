/**
 * A core-NATS subscriber process (bench/lib/events.ts startWatchers forks it for nats-fanout):
 * `streams` subscriptions on the subject `path` (e.g. `berth.>`) spread over `connections`
 * NATS connections to `url`. Same protocol with the parent as watch-worker.ts ("spec" →
 * "ready"; "finish" → "result" with an HDR histogram of receipt − the producer's send time,
 * which the producing CreateWorkspace put in agent_id as `<marker><epoch µs>`).
 * No protobuf decode per message: the marker is found in the payload bytes (1,000
 * subscriptions × 500 events/s is 500,000 messages/s; the subscribers must not be the bound).
 */
import { performance } from "node:perf_hooks";
import { windowHistogram } from "./window.js";
import { connect, type NatsConnection } from "@nats-io/transport-node";

interface Spec {
  url: string;
  path: string;
  connections: number;
  streams: number;
  marker: string;
}
type In = { type: "spec"; spec: Spec } | { type: "finish"; fromUs: number; toUs: number };

const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;
let sent: Float64Array = new Float64Array(1 << 20);
let recv: Float64Array = new Float64Array(1 << 20);
let n = 0;
/** Every message and its bytes since the last collect (the protocol of loadgen/watch-worker.ts). */
let received = 0;
let bytes = 0;
let lastCpu = process.cpuUsage();
let errors = 0;
let ended = 0;
const errorKinds: Record<string, number> = {};
const conns: NatsConnection[] = [];

function keep(s: number, r: number): void {
  if (n === sent.length) {
    const a = new Float64Array(sent.length * 2);
    a.set(sent);
    sent = a;
    const b = new Float64Array(recv.length * 2);
    b.set(recv);
    recv = b;
  }
  sent[n] = s;
  recv[n] = r;
  n++;
}

function count(kind: string): void {
  errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
}

async function open(spec: Spec): Promise<void> {
  const marker = Buffer.from(spec.marker);
  for (let c = 0; c < spec.connections; c++) {
    const nc = await connect({ servers: spec.url, name: `bench-nats-sub-${process.pid}-${c}`, maxReconnectAttempts: 0 });
    conns.push(nc);
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error" || s.type === "disconnect") count(`status ${s.type}`);
    })();
    void nc.closed().then((err) => {
      ended++;
      if (err) count(`closed: ${err.message}`);
    });
  }
  for (let i = 0; i < spec.streams; i++) {
    conns[i % conns.length]!.subscribe(spec.path, {
      callback: (err, m) => {
        const t = nowUs();
        if (err) {
          errors++;
          count(`subscription: ${err.message}`);
          return;
        }
        const d = m.data;
        received++;
        bytes += d.byteLength;
        const msg = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
        const at = msg.indexOf(marker);
        if (at < 0) return;
        let us = 0;
        for (let j = at + marker.length; j < msg.length && msg[j]! >= 48 && msg[j]! <= 57; j++) us = us * 10 + (msg[j]! - 48);
        keep(us, t);
      },
    });
  }
  // Every SUB is at the server before the producer starts.
  await Promise.all(conns.map((nc) => nc.flush()));
}

process.on("message", (msg: In) => {
  if (msg.type === "spec") {
    open(msg.spec).then(
      () => process.send!({ type: "ready" }),
      (err: unknown) => process.send!({ type: "failed", error: String(err) }),
    );
  } else {
    const { inWindow, histogram } = windowHistogram(sent, recv, n, msg.fromUs, msg.toUs);
    const cpu = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    // A collect: report and forget, keep the subscriptions (bench/lib/events.ts Watchers.collect).
    process.send!({ type: "result", received, inWindow, bytes, histogram, errors, errorKinds, streamsEnded: ended, cpuMs: (cpu.user + cpu.system) / 1000 });
    n = 0;
    received = 0;
    bytes = 0;
  }
});
