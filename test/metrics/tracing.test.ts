/** W3C traceparent parsing and the OTLP exporter's bounds (no server). */
import http from "node:http";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { OtlpHttpExporter, unixNanos, type SpanData } from "../../src/observability/tracing/otlp-exporter.js";
import { newSpanId, newTraceId, parseTraceParent } from "../../src/observability/tracing/trace-context.js";

const silent = pino({ level: "silent" });

function span(i: number): SpanData {
  return { traceId: newTraceId(), spanId: newSpanId(), parentSpanId: "", name: `s${i}`, kind: 2, startMs: Date.now(), endMs: Date.now() + 1, attributes: {}, statusCode: 0 };
}

describe("traceparent", () => {
  it.each([
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", parentSpanId: "00f067aa0ba902b7", sampled: true }],
    ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", parentSpanId: "00f067aa0ba902b7", sampled: false }],
    ["01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future", { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", parentSpanId: "00f067aa0ba902b7", sampled: true }],
  ])("parses %s", (header, expected) => {
    expect(parseTraceParent(header)).toEqual(expected);
  });

  it.each([
    undefined,
    "",
    "garbage",
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
  ])("refuses %s", (header) => {
    expect(parseTraceParent(header)).toBeUndefined();
  });

  it("mints distinct, well-formed ids", () => {
    const ids = new Set(Array.from({ length: 2000 }, () => newSpanId()));
    expect(ids.size).toBe(2000);
    expect([...ids].every((id) => /^[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(newTraceId()).toMatch(/^[0-9a-f]{32}$/);
  });

  it("converts epoch milliseconds to decimal nanoseconds", () => {
    expect(unixNanos(1_700_000_000_123.5)).toBe("1700000000123500000");
    expect(unixNanos(1_700_000_000_123)).toBe("1700000000123000000");
    expect(unixNanos(0)).toBe("0");
  });
});

describe("OTLP exporter", () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  it("bounds its queue, never throws, and counts what a dead collector lost", async () => {
    const exporter = new OtlpHttpExporter({ endpoint: "http://127.0.0.1:9", serviceName: "t", logger: silent, maxQueue: 10, maxBatch: 100, flushIntervalMs: 60_000, timeoutMs: 2000 });
    closers.push(() => exporter.shutdown(100));
    for (let i = 0; i < 25; i++) exporter.enqueue(span(i));
    expect(exporter.queued).toBe(10);
    expect(exporter.dropped).toBe(15);
    await exporter.flush();
    expect(exporter.failed).toBe(10);
    expect(exporter.queued).toBe(0);
  });

  it("posts batches of at most maxBatch spans, with the configured headers", async () => {
    const bodies: { count: number; auth: string | undefined }[] = [];
    const server = http.createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString()));
      req.on("end", () => {
        const body = JSON.parse(raw) as { resourceSpans: { scopeSpans: { spans: unknown[] }[] }[] };
        bodies.push({ count: body.resourceSpans[0]!.scopeSpans[0]!.spans.length, auth: req.headers["authorization"] });
        res.end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    closers.push(() => new Promise<void>((r) => server.close(() => r())));
    const port = (server.address() as { port: number }).port;
    const exporter = new OtlpHttpExporter({ endpoint: `http://127.0.0.1:${port}/`, headers: { authorization: "Bearer x" }, serviceName: "t", logger: silent, maxBatch: 4, flushIntervalMs: 60_000 });
    for (let i = 0; i < 10; i++) exporter.enqueue(span(i));
    await exporter.shutdown();
    expect(bodies.map((b) => b.count).reduce((a, b) => a + b, 0)).toBe(10);
    expect(bodies.every((b) => b.count <= 4 && b.auth === "Bearer x")).toBe(true);
    expect(exporter.exported).toBe(10);
  });
});
