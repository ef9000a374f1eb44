/**
 * Tracing through the OpenTelemetry SDK, without a Berth server: W3C traceparent extraction, the
 * RPC observer's SERVER spans (parent/child ids, parent-based sampling, status, times, the log
 * line's ids) as received by a real local OTLP/HTTP collector, and the export's bounds.
 * test/metrics/metrics.test.ts does the same end to end through a real server on both transports.
 */
import http from "node:http";
import { trace } from "@opentelemetry/api";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Call } from "../../src/transport/call.js";
import { RpcTracer, incomingContext } from "../../src/observability/tracing/rpc-tracer.js";
import { SpanExport } from "../../src/observability/tracing/span-export.js";

const silent = pino({ level: "silent" });

type AnyValue = Record<string, unknown>;
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: AnyValue }[];
  status: { code: number; message?: string };
}
interface Post {
  readonly path: string;
  readonly contentType: string | undefined;
  readonly auth: string | undefined;
  readonly body: { resourceSpans: { resource: { attributes: { key: string; value: AnyValue }[] }; scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[] }[] };
}

/** A fake call as the pipeline hands it to its observer: request headers, method, protocol, start. */
function fakeCall(headers: Record<string, string>, o: { protocol?: "connect" | "grpc"; elapsedMs?: number } = {}): Call {
  const method = WorkspaceService.method.getWorkspace;
  return {
    requestHeader: (name: string) => headers[name],
    entry: { method, path: `/${WorkspaceService.typeName}/${method.name}` },
    protocol: o.protocol ?? "connect",
    start: performance.now() - (o.elapsedMs ?? 0),
  } as unknown as Call;
}

function attribute(span: OtlpSpan, key: string): AnyValue | undefined {
  return span.attributes.find((a) => a.key === key)?.value;
}

describe("traceparent", () => {
  it.each([
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true }],
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 0, isRemote: true }],
    ["01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future", { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: 1, isRemote: true }],
  ])("parses %s", (header, expected) => {
    expect(trace.getSpanContext(incomingContext(fakeCall({ traceparent: header })))).toEqual(expected);
  });

  it.each([
    "",
    "garbage",
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
  ])("refuses %j", (header) => {
    expect(trace.getSpanContext(incomingContext(fakeCall({ traceparent: header })))).toBeUndefined();
  });

  it("refuses an absent header", () => {
    expect(trace.getSpanContext(incomingContext(fakeCall({})))).toBeUndefined();
  });
});

describe("RPC tracer without an exporter", () => {
  const tracer = new RpcTracer(undefined);

  it("leaves the log line alone without a traceparent, or with an invalid one", () => {
    for (const headers of [{}, { traceparent: "garbage" }] as Record<string, string>[]) {
      const line: Record<string, unknown> = {};
      tracer.rpcEnded(fakeCall(headers), 0, 0.001, line);
      expect(line).toEqual({});
    }
  });

  it("logs the caller's trace id and a new span id of this RPC, distinct per call", () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "00f067aa0ba902b7";
    const spanIds = new Set<unknown>();
    for (let i = 0; i < 2000; i++) {
      const line: Record<string, unknown> = {};
      tracer.rpcEnded(fakeCall({ traceparent: `00-${traceId}-${parent}-01` }), 0, 0.001, line);
      expect(line["trace_id"]).toBe(traceId);
      expect(line["span_id"]).toMatch(/^[0-9a-f]{16}$/);
      expect(line["span_id"]).not.toBe(parent);
      spanIds.add(line["span_id"]);
    }
    expect(spanIds.size).toBe(2000);
  });
});

describe("OTLP export through the SDK", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  /** A real HTTP server capturing the OTLP/HTTP JSON POSTs. */
  async function collector(): Promise<{ url: string; posts: Post[] }> {
    const posts: Post[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        posts.push({
          path: req.url ?? "",
          contentType: req.headers["content-type"],
          auth: req.headers["authorization"],
          body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Post["body"],
        });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, posts };
  }

  function spansOf(posts: readonly Post[]): OtlpSpan[] {
    return posts.flatMap((p) => p.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
  }

  it("exports the RPC's SERVER span as a child of the caller's, with the logged ids, and honours sampled=0", async () => {
    const { url, posts } = await collector();
    const exporter = new SpanExport({ endpoint: url, headers: { authorization: "Bearer x" }, serviceName: "berth-test", serviceInstanceId: "instance-1", logger: silent, flushIntervalMs: 60_000 });
    closers.push(() => exporter.shutdown());
    const tracer = new RpcTracer(exporter.tracer);

    const traceId = "11112222333344445555666677778888";
    const parent = "aaaabbbbccccdddd";
    const child: Record<string, unknown> = { code: "OK", sessionId: "session-1" };
    const before = Date.now();
    tracer.rpcEnded(fakeCall({ traceparent: `00-${traceId}-${parent}-01`, tracestate: "vendor=1" }, { elapsedMs: 250 }), 0, 0.25, child);
    // Not sampled upstream: logged, not exported.
    const unsampled = "99990000999900009999000099990000";
    const unsampledLine: Record<string, unknown> = { code: "OK" };
    tracer.rpcEnded(fakeCall({ traceparent: `00-${unsampled}-${parent}-00` }), 0, 0.001, unsampledLine);
    // No traceparent (or an invalid one): the root of a new trace.
    const root: Record<string, unknown> = { code: "OK" };
    tracer.rpcEnded(fakeCall({}, { protocol: "grpc" }), 0, 0.001, root);
    const invalid: Record<string, unknown> = { code: "OK" };
    tracer.rpcEnded(fakeCall({ traceparent: "garbage" }), 0, 0.001, invalid);
    // Server errors (INTERNAL) are error spans; NOT_FOUND is the caller's problem, not one.
    const internal: Record<string, unknown> = { code: "INTERNAL" };
    tracer.rpcEnded(fakeCall({}), 13, 0.001, internal);
    const notFound: Record<string, unknown> = { code: "NOT_FOUND" };
    tracer.rpcEnded(fakeCall({}), 5, 0.001, notFound);
    await exporter.flush();

    expect(posts.length).toBeGreaterThan(0);
    expect(posts.every((p) => p.path === "/v1/traces" && p.contentType === "application/json" && p.auth === "Bearer x")).toBe(true);
    const resource = posts[0]!.body.resourceSpans[0]!.resource.attributes;
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "berth-test" } });
    expect(resource).toContainEqual({ key: "service.instance.id", value: { stringValue: "instance-1" } });
    expect(resource).toContainEqual({ key: "telemetry.sdk.name", value: { stringValue: "opentelemetry" } });
    expect(posts[0]!.body.resourceSpans[0]!.scopeSpans[0]!.scope.name).toBe("berth");
    const spans = spansOf(posts);
    expect(spans).toHaveLength(5);
    expect(exporter.exported).toBe(5);

    // Parent/child: the caller's trace and span id are the parent; the logged span id is this span's.
    expect(child["trace_id"]).toBe(traceId);
    expect(child["span_id"]).toMatch(/^[0-9a-f]{16}$/);
    expect(child["span_id"]).not.toBe(parent);
    const span = spans.find((s) => s.traceId === traceId)!;
    expect(span).toMatchObject({ name: "berth.v1.WorkspaceService/GetWorkspace", kind: 2, parentSpanId: parent, spanId: child["span_id"], traceState: "vendor=1", status: { code: 0 } });
    expect(span.attributes).toEqual(
      expect.arrayContaining([
        { key: "rpc.system", value: { stringValue: "connect_rpc" } },
        { key: "rpc.service", value: { stringValue: "berth.v1.WorkspaceService" } },
        { key: "rpc.method", value: { stringValue: "GetWorkspace" } },
        { key: "rpc.grpc.status_code", value: { intValue: 0 } },
        { key: "berth.protocol", value: { stringValue: "connect" } },
        { key: "berth.session_id", value: { stringValue: "session-1" } },
      ]),
    );
    // The call's own times: it started 250 ms before it ended, in epoch nanoseconds.
    const start = BigInt(span.startTimeUnixNano);
    const end = BigInt(span.endTimeUnixNano);
    expect(Number(end - start) / 1e6).toBeCloseTo(250, 3);
    expect(Number(start / 1_000_000n)).toBeGreaterThanOrEqual(before - 250 - 50);
    expect(Number(end / 1_000_000n)).toBeLessThanOrEqual(Date.now() + 50);

    // Sampling: the unsampled call is logged with its caller's trace, but never exported.
    expect(unsampledLine["trace_id"]).toBe(unsampled);
    expect(unsampledLine["span_id"]).toMatch(/^[0-9a-f]{16}$/);
    expect(spans.find((s) => s.traceId === unsampled)).toBeUndefined();

    // Roots: new traces, no parent, the logged ids are the exported span's.
    for (const line of [root, invalid]) {
      expect(line["trace_id"]).toMatch(/^[0-9a-f]{32}$/);
      const s = spans.find((x) => x.traceId === line["trace_id"])!;
      expect(s).toMatchObject({ spanId: line["span_id"] });
      expect(s.parentSpanId).toBeUndefined();
    }
    expect(root["trace_id"]).not.toBe(invalid["trace_id"]);
    const grpcSpan = spans.find((s) => s.traceId === root["trace_id"])!;
    expect(attribute(grpcSpan, "rpc.system")).toEqual({ stringValue: "grpc" });
    expect(attribute(grpcSpan, "berth.session_id")).toBeUndefined();

    expect(spans.find((s) => s.traceId === internal["trace_id"])!.status).toEqual({ code: 2, message: "INTERNAL" });
    expect(spans.find((s) => s.traceId === notFound["trace_id"])!.status).toEqual({ code: 0 });
  });

  it("bounds its queue, never throws, and counts and logs once what a dead collector lost", async () => {
    const warnings: unknown[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    // Nothing listens on port 9: connection refused, retried until the 500 ms budget is spent.
    const exporter = new SpanExport({ endpoint: "http://127.0.0.1:9", serviceName: "t", logger, maxQueue: 10, maxBatch: 10, flushIntervalMs: 60_000, timeoutMs: 500 });
    closers.push(() => exporter.shutdown(100));
    // A full batch (10) starts an export; the next 10 fill the queue while it is in flight; 5 are dropped.
    for (let i = 0; i < 25; i++) exporter.tracer.startSpan(`s${i}`).end();
    await exporter.flush();
    expect(exporter.failed).toBe(20);
    expect(exporter.exported).toBe(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: "otlp: span export failed; spans are dropped until the collector answers", url: "http://127.0.0.1:9/v1/traces" });
  });

  it("flush() waits for an export its timer started and the collector has not answered yet", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let received!: () => void;
    const arrived = new Promise<void>((r) => (received = r));
    const server = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        received();
        void held.then(() => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const exporter = new SpanExport({ endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, serviceName: "t", logger: silent, flushIntervalMs: 10 });
    closers.push(() => exporter.shutdown());
    exporter.tracer.startSpan("in-flight").end();
    // The processor's timer has handed the span to an export: the collector holds its answer.
    await arrived;
    let flushed = false;
    const flushing = exporter.flush().then(() => (flushed = true));
    // A negative can only be waited out: the SDK's own forceFlush settles at once (in microtasks), so 50 ms is ample.
    await new Promise((r) => setTimeout(r, 50));
    expect(flushed).toBe(false);
    release();
    await flushing;
    expect(exporter.exported).toBe(1);
  });

  it("posts batches of at most maxBatch spans, with the configured headers, and flushes on shutdown", async () => {
    const { url, posts } = await collector();
    const exporter = new SpanExport({ endpoint: url, headers: { authorization: "Bearer x" }, serviceName: "t", logger: silent, maxBatch: 4, flushIntervalMs: 60_000 });
    for (let i = 0; i < 10; i++) exporter.tracer.startSpan(`s${i}`).end();
    await exporter.shutdown();
    const counts = posts.map((p) => spansOf([p]).length);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(10);
    expect(counts.every((n) => n <= 4)).toBe(true);
    expect(posts.every((p) => p.auth === "Bearer x")).toBe(true);
    expect(exporter.exported).toBe(10);
  });
});
