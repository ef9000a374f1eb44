/**
 * A WatchEvents subscriber process (bench/lib/events.ts forks it): opens `streams` server
 * streams over `connections` HTTP/2 connections (raw gRPC over node:http2), and for every
 * event message received finds the producer's send time in it — the producing RPC put
 * `<marker><epoch µs>` in the event's agent_id — and records receive − send (same machine
 * clock: performance.timeOrigin + performance.now()) in an HDR histogram, for events sent
 * inside the measured window [from, to] (epoch µs) the parent gives on "collect"; then it
 * forgets what it reported and goes on (a scenario steps the rate up over the same streams).
 * No protobuf decode per message: the marker is found in the frame bytes (1,000 streams ×
 * 500 events/s is 500,000 messages/s, and the generator must not be the bottleneck).
 */
import http2 from "node:http2";
import { performance } from "node:perf_hooks";
import { windowHistogram } from "./window.js";

interface Spec {
  url: string;
  path: string;
  connections: number;
  streams: number;
  body: string;
  marker: string;
}
type In = { type: "spec"; spec: Spec } | { type: "collect"; fromUs: number; toUs: number };

const nowUs = () => (performance.timeOrigin + performance.now()) * 1000;
let spec: Spec;
// Arrivals kept raw (send µs, receive µs) so the window can be applied at the end.
let sent: Float64Array = new Float64Array(1 << 20);
let recv: Float64Array = new Float64Array(1 << 20);
let n = 0;
/** Every event message since the last collect, and their bytes. */
let received = 0;
let bytes = 0;
let errors = 0;
let ended = 0;
const errorKinds: Record<string, number> = {};
let lastCpu = process.cpuUsage();

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

async function open(): Promise<void> {
  const marker = Buffer.from(spec.marker);
  const body = Buffer.from(spec.body, "base64");
  const sessions = await Promise.all(
    Array.from({ length: spec.connections }, () => new Promise<http2.ClientHttp2Session>((resolve, reject) => {
      const s = http2.connect(spec.url, { peerMaxConcurrentStreams: 100_000, settings: { initialWindowSize: 1 << 20 } });
      s.once("connect", () => {
        // The connection-level flow-control window defaults to 64 KiB, shared by all its streams:
        // widen it so ~250 streams per connection are not throttled by the client.
        s.setLocalWindowSize(64 << 20);
        resolve(s);
      });
      s.once("error", reject);
    })),
  );
  for (const s of sessions) s.on("error", (e) => (errorKinds[`session: ${e.message}`] = (errorKinds[`session: ${e.message}`] ?? 0) + 1));
  let headersSeen = 0;
  let allHeaders: () => void = () => {};
  const headersDone = new Promise<void>((r) => (allHeaders = r));
  for (let i = 0; i < spec.streams; i++) {
    const req = sessions[i % sessions.length]!.request({ ":method": "POST", ":path": spec.path, "content-type": "application/grpc", te: "trailers" });
    let pending: Buffer = Buffer.alloc(0);
    let counted = false;
    const seen = () => {
      if (!counted) {
        counted = true;
        if (++headersSeen === spec.streams) allHeaders();
      }
    };
    req.on("response", seen);
    req.on("data", (chunk: Buffer) => {
      const t = nowUs();
      seen();
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let off = 0;
      while (pending.length - off >= 5) {
        const len = pending.readUInt32BE(off + 1);
        if (pending.length - off < 5 + len) break;
        const msg = pending.subarray(off + 5, off + 5 + len);
        received++;
        bytes += len;
        const at = msg.indexOf(marker);
        if (at >= 0) {
          let us = 0;
          for (let j = at + marker.length; j < msg.length && msg[j]! >= 48 && msg[j]! <= 57; j++) us = us * 10 + (msg[j]! - 48);
          keep(us, t);
        }
        off += 5 + len;
      }
      pending = off === pending.length ? Buffer.alloc(0) : pending.subarray(off);
    });
    req.on("trailers", (h) => {
      if (h["grpc-status"] !== "0") errorKinds[`grpc-status ${String(h["grpc-status"])}: ${String(h["grpc-message"] ?? "")}`] = (errorKinds[`grpc-status ${String(h["grpc-status"])}: ${String(h["grpc-message"] ?? "")}`] ?? 0) + 1;
    });
    req.on("error", () => errors++);
    req.on("close", () => ended++);
    req.end(body);
  }
  // A stream's headers come with its first message or earlier; do not wait for them forever.
  await Promise.race([headersDone, new Promise((r) => setTimeout(r, 2_000))]);
  (globalThis as { sessions?: unknown }).sessions = sessions;
}

process.on("message", (msg: In) => {
  if (msg.type === "spec") {
    spec = msg.spec;
    open().then(
      () => process.send!({ type: "ready" }),
      (err: unknown) => process.send!({ type: "failed", error: String(err) }),
    );
  } else {
    const { inWindow, histogram } = windowHistogram(sent, recv, n, msg.fromUs, msg.toUs);
    const cpu = process.cpuUsage(lastCpu);
    lastCpu = process.cpuUsage();
    process.send!({ type: "result", received, inWindow, bytes, histogram, errors, errorKinds, streamsEnded: ended, cpuMs: (cpu.user + cpu.system) / 1000 });
    n = 0;
    received = 0;
    bytes = 0;
  }
});
process.on("disconnect", () => process.exit(0));
