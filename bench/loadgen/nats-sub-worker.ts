/**
 * A core-NATS subscriber process (bench/lib/events.ts startWatchers forks it for nats-fanout):
 * `streams` subscriptions on the subject `path` (e.g. `berth.>`) spread over `connections`
 * NATS connections to `url`. Same protocol with the parent as watch-worker.ts ("spec" →
 * "ready"; "finish" → "result" with an HDR histogram of receipt − the producer's send time,
 * which the producing CreateWorkspace put in agent_id as `<marker><epoch µs>`).
 *
 * It speaks the NATS client protocol itself (CONNECT, SUB, PING/PONG; MSG and HMSG frames) over
 * a plain socket rather than through nats.js: 1,000 subscriptions × 500 events/s is 500,000
 * messages/s on the same 2 cores as nats-server, Berth and PostgreSQL, and nats.js spends
 * ~4 µs of JavaScript per message (a Msg object, its subject and header parsing, a callback):
 * two such processes took 1.0–1.5 cores and fell behind (measured with nats-server alone and a
 * paced publisher: nats.js subscribers p99 185–196 ms at 2 cores busy, this reader p99 4 ms at
 * 0.1 core each), so the figure was the subscribers' backlog, not NATS's fan-out. This reader
 * frames each message with Buffer.indexOf and reads only the marker; it checks nothing NATS
 * itself guarantees. The scenario's subscribers stand for consumers on other machines.
 */
import net from "node:net";
import { performance } from "node:perf_hooks";
import { windowHistogram } from "./window.js";

interface Spec {
  url: string;
  path: string;
  connections: number;
  streams: number;
  marker: string;
}
type In = { type: "spec"; spec: Spec } | { type: "finish"; fromUs: number; toUs: number };

const CR = 13;
const SPACE = 32;
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
  errors++;
  errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
}

const startsWith = (buf: Buffer, at: number, word: string): boolean => {
  for (let i = 0; i < word.length; i++) if (buf[at + i] !== word.charCodeAt(i)) return false;
  return true;
};

/**
 * One connection: subscribes, answers the server's PINGs, records each message's latency. Resolves
 * once the server answered the PING sent after the SUBs (every subscription is in place).
 */
function open(spec: Spec, sids: readonly number[], marker: Buffer): Promise<void> {
  const url = new URL(spec.url);
  const socket = net.connect(Number(url.port || 4222), url.hostname);
  socket.setNoDelay(true);
  let subscribed: (() => void) | undefined;
  let failed: ((err: Error) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    subscribed = resolve;
    failed = reject;
  });
  socket.on("error", (err) => {
    count(`socket: ${err.message}`);
    failed?.(err);
  });
  socket.on("close", () => ended++);
  socket.write(`CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":false,"name":"bench-nats-sub-${process.pid}"}\r\n`);
  socket.write(sids.map((sid) => `SUB ${spec.path} ${sid}\r\n`).join("") + "PING\r\n");
  let pending: Buffer | undefined;
  socket.on("data", (chunk: Buffer) => {
    const t = nowUs();
    const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const eol = buf.indexOf(CR, at);
      if (eol < 0 || eol + 1 >= buf.length) break;
      if (buf[at] === 77 /* M */ || buf[at] === 72 /* H */) {
        // MSG <subject> <sid> [reply-to] <size> / HMSG <subject> <sid> [reply-to] <header size> <total size>: the last number is what follows.
        let sp = eol - 1;
        while (buf[sp] !== SPACE) sp--;
        let size = 0;
        for (let j = sp + 1; j < eol; j++) size = size * 10 + buf[j]! - 48;
        const end = eol + 2 + size;
        if (end + 2 > buf.length) break;
        received++;
        bytes += size;
        // Searched within this message only (a message without the marker must not scan the rest of the chunk).
        const m = buf.subarray(0, end).indexOf(marker, eol + 2);
        if (m >= 0) {
          let us = 0;
          for (let j = m + marker.length; j < end && buf[j]! >= 48 && buf[j]! <= 57; j++) us = us * 10 + (buf[j]! - 48);
          keep(us, t);
        }
        at = end + 2;
        continue;
      }
      if (startsWith(buf, at, "PING")) socket.write("PONG\r\n");
      else if (startsWith(buf, at, "PONG")) {
        subscribed?.();
        subscribed = undefined;
      } else if (startsWith(buf, at, "-ERR")) count(`server: ${buf.toString("latin1", at, eol)}`);
      at = eol + 2;
    }
    pending = at >= buf.length ? undefined : Buffer.from(buf.subarray(at));
  });
  return ready;
}

process.on("message", (msg: In) => {
  if (msg.type === "spec") {
    const { spec } = msg;
    const marker = Buffer.from(spec.marker);
    const byConnection = Array.from({ length: spec.connections }, () => [] as number[]);
    for (let i = 0; i < spec.streams; i++) byConnection[i % spec.connections]!.push(i + 1);
    Promise.all(byConnection.map((sids) => open(spec, sids, marker))).then(
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
