/**
 * One load-generator process: opens its HTTP/2 connections (or pg pool), then on "go" runs a
 * closed loop with a fixed number of requests in flight, warms up, and records the latency of
 * every request completed inside the measured window in an HDR histogram (microseconds).
 * Raw gRPC over node:http2 (5-byte prefix + protobuf, te: trailers, grpc-status checked in
 * the trailers) or the Connect protocol (application/proto, HTTP status checked).
 */
import http2 from "node:http2";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import hdr from "hdr-histogram-js";
import pg from "pg";
import type { FromWorker, ToWorker, WorkerResult, WorkerSpec } from "./protocol.js";

function send(msg: FromWorker): void {
  process.send!(msg);
}

type Issue = () => Promise<string | undefined>; // resolves to an error kind, or undefined on success

function connectSession(url: string): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(url, { peerMaxConcurrentStreams: 1000 });
    s.once("connect", () => {
      s.off("error", reject);
      resolve(s);
    });
    s.once("error", reject);
  });
}

async function httpIssuers(spec: WorkerSpec): Promise<{ issue: Issue; close(): Promise<void> }> {
  const sessions = await Promise.all(Array.from({ length: spec.connections }, () => connectSession(spec.url!)));
  let broken: string | undefined;
  for (const s of sessions) {
    s.on("error", (err) => (broken = `session error: ${err.message}`));
    s.on("goaway", (code) => (broken = `goaway ${code}`));
  }
  const bodies = (spec.bodies ?? []).map((b) => Buffer.from(b, "base64"));
  if (bodies.length === 0) throw new Error("no request bodies");
  const grpc = spec.kind === "grpc";
  const mcp = spec.kind === "mcp";
  const headers: http2.OutgoingHttpHeaders = grpc
    ? { ":method": "POST", ":path": spec.path, "content-type": "application/grpc", te: "trailers" }
    : mcp
      ? { ":method": "POST", ":path": spec.path, "content-type": "application/json", accept: "application/json, text/event-stream" }
      : { ":method": "POST", ":path": spec.path, "content-type": "application/proto", "connect-protocol-version": "1" };
  let next = 0;
  const issue: Issue = () =>
    new Promise((resolve) => {
      if (broken) return resolve(broken);
      const i = next++;
      const session = sessions[i % sessions.length]!;
      const body = bodies[i % bodies.length]!;
      let error: string | undefined = grpc ? "no grpc-status" : undefined;
      const req = session.request(headers);
      req.on("response", (h) => {
        const status = Number(h[":status"]);
        if (grpc) {
          if (status !== 200) error = `http ${status}`;
          else if (h["grpc-status"] !== undefined) error = h["grpc-status"] === "0" ? undefined : `grpc-status ${String(h["grpc-status"])}`; // trailers-only
        } else if (status !== 200) error = `http ${status}`;
      });
      if (grpc) {
        req.on("trailers", (t) => {
          error = t["grpc-status"] === "0" ? undefined : `grpc-status ${String(t["grpc-status"])}: ${String(t["grpc-message"] ?? "")}`;
        });
      }
      // An MCP answer is HTTP 200 whether the tool worked or not: its body says which.
      const answer: Buffer[] | undefined = mcp ? [] : undefined;
      req.on("data", answer ? (c: Buffer) => answer.push(c) : () => {});
      req.on("error", (err) => (error = `stream error: ${err.message}`));
      req.on("close", () => {
        if (answer !== undefined && error === undefined) {
          const text = Buffer.concat(answer).toString("utf8");
          if (text.includes('"isError":true') || text.includes('"error":{')) error = `mcp error: ${text.slice(0, 200)}`;
        }
        resolve(req.rstCode && req.rstCode !== 0 ? `rst ${req.rstCode}` : error);
      });
      req.end(body);
    });
  return {
    issue,
    async close() {
      await Promise.all(sessions.map((s) => new Promise<void>((r) => s.close(() => r()))));
    },
  };
}

async function pgIssuers(spec: WorkerSpec): Promise<{ issue: Issue; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: spec.pgUrl, max: spec.pgPoolMax ?? spec.concurrency });
  // Open the pool's connections before the clock starts.
  const clients = await Promise.all(Array.from({ length: spec.pgPoolMax ?? spec.concurrency }, () => pool.connect()));
  for (const c of clients) c.release();
  const statements = spec.pgStatements ?? [];
  const issue: Issue = async () => {
    const client = await pool.connect();
    try {
      await client.query("BEGIN");
      for (const sql of statements) await client.query(sql, sql.includes("$1") ? [randomUUID(), randomUUID(), "bench insert of one row"] : []);
      await client.query("COMMIT");
      return undefined;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      return `pg: ${(err as Error).message}`;
    } finally {
      client.release();
    }
  };
  return { issue, close: () => pool.end() };
}

async function run(spec: WorkerSpec, go: Promise<void>): Promise<WorkerResult> {
  const target = spec.kind === "pg" ? await pgIssuers(spec) : await httpIssuers(spec);
  send({ type: "ready" });
  await go;

  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  const errorKinds: Record<string, number> = {};
  let requests = 0;
  let errors = 0;
  const countMode = spec.totalRequests !== undefined;
  let started = 0; // count mode: requests handed out
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let measureFrom = countMode ? t0 : t0 + spec.warmupMs;
  let measureTo = countMode ? Number.POSITIVE_INFINITY : measureFrom + spec.durationMs;
  let stop = false;

  const loop = async (): Promise<void> => {
    while (!stop) {
      if (countMode) {
        if (started >= spec.totalRequests) return;
        started++;
      }
      const s = performance.now();
      const error = await target.issue();
      const e = performance.now();
      if (e >= measureFrom && e < measureTo) {
        requests++;
        if (error === undefined) histogram.recordValue(Math.max(1, Math.round((e - s) * 1000)));
        else {
          errors++;
          errorKinds[error] = (errorKinds[error] ?? 0) + 1;
        }
      } else if (e >= measureTo) stop = true;
    }
  };
  const loops = Array.from({ length: spec.concurrency }, loop);
  if (!countMode) setTimeout(() => (stop = true), spec.warmupMs + spec.durationMs + 5).unref();
  await Promise.all(loops);
  const end = countMode ? performance.now() : measureTo;
  measureTo = Math.min(measureTo, end);
  measureFrom = Math.min(measureFrom, end);
  const cpu = process.cpuUsage(cpu0);
  await target.close().catch(() => {});
  return {
    requests,
    errors,
    errorKinds,
    histogram: hdr.encodeIntoCompressedBase64(histogram),
    elapsedMs: end - measureFrom,
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

let releaseGo: () => void = () => {};
const go = new Promise<void>((r) => (releaseGo = r));
process.on("message", (msg: ToWorker) => {
  if (msg.type === "go") releaseGo();
  else if (msg.type === "spec") {
    run(msg.spec, go).then(
      (result) => {
        send({ type: "result", result });
        process.disconnect();
      },
      (err: unknown) => {
        send({ type: "failed", error: err instanceof Error ? err.stack ?? err.message : String(err) });
        process.disconnect();
      },
    );
  }
});
