/**
 * A minimal OTLP/HTTP JSON span exporter (https://opentelemetry.io/docs/specs/otlp/#otlphttp).
 *
 * - enqueue() is synchronous and O(1): it pushes the span's raw data onto a bounded queue and
 *   never blocks, awaits or throws. A full queue drops the new span (counted in `dropped`).
 * - A timer (every flushIntervalMs) or a full batch starts a flush; at most one POST is in
 *   flight. A failed POST drops its batch (counted in `failed`) and logs one warning per streak
 *   of failures: losing spans is better than holding memory or slowing RPCs.
 * - shutdown() flushes what is queued, bounded by timeoutMs.
 *
 * Why not the OpenTelemetry SDK: see docs/decisions.md ("Tracing: W3C traceparent and a small
 * OTLP/HTTP JSON exporter").
 */
import type { Logger } from "pino";

export interface SpanData {
  readonly traceId: string;
  readonly spanId: string;
  /** Empty for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** SPAN_KIND_SERVER = 2. */
  readonly kind: number;
  /** Epoch milliseconds, fractional (performance.timeOrigin + performance.now()). */
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: Readonly<Record<string, string | number | boolean | undefined>>;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly statusMessage?: string;
}

export interface OtlpExporterOptions {
  /** Base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans go to <endpoint>/v1/traces. */
  readonly endpoint: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly serviceInstanceId?: string;
  readonly logger: Logger;
  /** Spans held at most (default 2048); more are dropped. */
  readonly maxQueue?: number;
  /** Spans per POST (default 512). */
  readonly maxBatch?: number;
  /** Default 1000 ms. */
  readonly flushIntervalMs?: number;
  /** Per POST (default 10,000 ms). */
  readonly timeoutMs?: number;
}

type AnyValue = { stringValue: string } | { intValue: string } | { doubleValue: number } | { boolValue: boolean };

function anyValue(v: string | number | boolean): AnyValue {
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}

function attributes(a: Readonly<Record<string, string | number | boolean | undefined>>): { key: string; value: AnyValue }[] {
  const out: { key: string; value: AnyValue }[] = [];
  for (const key in a) {
    const v = a[key];
    if (v !== undefined) out.push({ key, value: anyValue(v) });
  }
  return out;
}

/** Epoch milliseconds (fractional) as OTLP's fixed64 nanoseconds, a decimal string in JSON. */
export function unixNanos(ms: number): string {
  const whole = Math.floor(ms);
  const micros = Math.round((ms - whole) * 1e6);
  return (BigInt(whole) * 1_000_000n + BigInt(micros)).toString();
}

export class OtlpHttpExporter {
  /** Spans dropped because the queue was full. */
  dropped = 0;
  /** Spans lost to failed POSTs. */
  failed = 0;
  /** Spans the collector accepted. */
  exported = 0;
  private readonly url: string;
  private readonly maxQueue: number;
  private readonly maxBatch: number;
  private readonly timeoutMs: number;
  private queue: SpanData[] = [];
  private inFlight: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private failing = false;
  private stopped = false;
  private readonly resource: { attributes: { key: string; value: AnyValue }[] };

  constructor(private readonly o: OtlpExporterOptions) {
    this.url = `${o.endpoint.replace(/\/+$/, "")}/v1/traces`;
    this.maxQueue = o.maxQueue ?? 2048;
    this.maxBatch = o.maxBatch ?? 512;
    this.timeoutMs = o.timeoutMs ?? 10_000;
    this.resource = {
      attributes: attributes({ "service.name": o.serviceName, "service.instance.id": o.serviceInstanceId, "telemetry.sdk.name": "berth", "telemetry.sdk.language": "nodejs" }),
    };
    this.timer = setInterval(() => void this.flush(), o.flushIntervalMs ?? 1000);
    this.timer.unref();
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Queues a span; never blocks. */
  enqueue(span: SpanData): void {
    if (this.stopped || this.queue.length >= this.maxQueue) {
      this.dropped++;
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.maxBatch && this.inFlight === undefined) void this.flush();
  }

  /** Sends what is queued, one batch at a time; resolves when the queue is empty or a POST failed. */
  flush(): Promise<void> {
    if (this.inFlight !== undefined) return this.inFlight;
    if (this.queue.length === 0) return Promise.resolve();
    this.inFlight = this.drain().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.length <= this.maxBatch ? this.queue : this.queue.slice(0, this.maxBatch);
      this.queue = this.queue.length <= this.maxBatch ? [] : this.queue.slice(this.maxBatch);
      if (!(await this.post(batch))) return;
    }
  }

  private async post(batch: readonly SpanData[]): Promise<boolean> {
    const body = JSON.stringify({
      resourceSpans: [
        {
          resource: this.resource,
          scopeSpans: [{ scope: { name: "berth" }, spans: batch.map(toOtlpSpan) }],
        },
      ],
    });
    try {
      const res = await fetch(this.url, {
        method: "POST",
        headers: { ...this.o.headers, "content-type": "application/json" },
        body,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      this.exported += batch.length;
      if (this.failing) this.o.logger.info({ url: this.url }, "otlp: exporting spans again");
      this.failing = false;
      return true;
    } catch (err) {
      this.failed += batch.length;
      if (!this.failing) this.o.logger.warn({ err, url: this.url, spans: batch.length }, "otlp: span export failed; spans are dropped until the collector answers");
      this.failing = true;
      return false;
    }
  }

  /** Stops the timer and flushes what is queued, within timeoutMs. */
  async shutdown(timeoutMs = 2000): Promise<void> {
    clearInterval(this.timer);
    const done = (async () => {
      await this.inFlight;
      await this.flush();
    })();
    this.stopped = true;
    await Promise.race([done, new Promise<void>((r) => setTimeout(r, timeoutMs).unref())]);
  }
}

function toOtlpSpan(s: SpanData): Record<string, unknown> {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId !== "" ? { parentSpanId: s.parentSpanId } : {}),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: unixNanos(s.startMs),
    endTimeUnixNano: unixNanos(s.endMs),
    attributes: attributes(s.attributes),
    status: s.statusMessage !== undefined ? { code: s.statusCode, message: s.statusMessage } : { code: s.statusCode },
  };
}
