/**
 * Span export through the OpenTelemetry JS SDK: one BasicTracerProvider per server (build()),
 * a BatchSpanProcessor and the OTLP/HTTP exporter (JSON body to <endpoint>/v1/traces).
 *
 * - Nothing is registered globally (no `trace.setGlobalTracerProvider`, no context manager, no
 *   propagator, no instrumentation): tests start several servers in one process, each with its
 *   own provider, and the RPC pipeline passes contexts explicitly (rpc-tracer.ts).
 * - Ending a span is synchronous and O(1): the processor pushes it onto a bounded queue
 *   (maxQueue, default 2048; a full queue drops new spans) and exports batches of maxBatch
 *   (default 512) every flushIntervalMs (default 1000) or when a batch is full.
 * - The exporter retries what is retryable (connection refused or reset, 429, 502, 503, 504)
 *   with backoff, within timeoutMs (default 10 s) per batch; then the batch is dropped. The SDK
 *   reports through its global `diag` logger, which Berth does not install: failures are logged
 *   here instead, one warning per streak of failed batches (and one line when export recovers).
 * - shutdown() flushes what is queued, bounded by its timeout, and stops the provider.
 *
 * Why the SDK and what was rejected: docs/decisions.md ("Tracing through the OpenTelemetry SDK").
 */
import type { Tracer } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";
import type { Logger } from "pino";

/** Not in the stable semantic conventions yet (service.instance.id is "development"). */
const ATTR_SERVICE_INSTANCE_ID = "service.instance.id";
/** The instrumentation scope of Berth's spans. */
const SCOPE = "berth";

export interface SpanExportOptions {
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
  /** Per batch, retries included (default 10,000 ms). */
  readonly timeoutMs?: number;
}

/**
 * The SDK's exporter, counting what it sent and lost and logging failures (the SDK's own
 * reports go to `diag`, which stays a no-op: registering it would be global).
 */
class ReportingExporter implements SpanExporter {
  exported = 0;
  failed = 0;
  private failing = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly logger: Logger,
    private readonly url: string,
  ) {}

  /** Exports handed to the inner exporter and not answered yet. */
  private readonly inFlight = new Set<Promise<void>>();

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    let done!: () => void;
    const answered = new Promise<void>((r) => (done = r));
    this.inFlight.add(answered);
    void answered.then(() => this.inFlight.delete(answered));
    this.inner.export(spans, (result) => {
      done();
      if (result.code === ExportResultCode.SUCCESS) {
        this.exported += spans.length;
        if (this.failing) this.logger.info({ url: this.url }, "otlp: exporting spans again");
        this.failing = false;
      } else {
        this.failed += spans.length;
        if (!this.failing) this.logger.warn({ err: result.error, url: this.url, spans: spans.length }, "otlp: span export failed; spans are dropped until the collector answers");
        this.failing = true;
      }
      resultCallback(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }

  /** Resolves once every export started before the call has been answered (or given up). */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }
}

export class SpanExport {
  /** The tracer the RPC observer starts SERVER spans with. */
  readonly tracer: Tracer;
  readonly provider: BasicTracerProvider;
  /** <endpoint>/v1/traces. */
  readonly url: string;
  private readonly exporter: ReportingExporter;

  constructor(o: SpanExportOptions) {
    this.url = `${o.endpoint.replace(/\/+$/, "")}/v1/traces`;
    const timeoutMs = o.timeoutMs ?? 10_000;
    this.exporter = new ReportingExporter(new OTLPTraceExporter({ url: this.url, headers: { ...o.headers }, timeoutMillis: timeoutMs }), o.logger, this.url);
    const attributes: Record<string, string> = { [ATTR_SERVICE_NAME]: o.serviceName };
    if (o.serviceInstanceId !== undefined) attributes[ATTR_SERVICE_INSTANCE_ID] = o.serviceInstanceId;
    this.provider = new BasicTracerProvider({
      resource: defaultResource().merge(resourceFromAttributes(attributes)),
      // Parent-based: a caller's sampled=0 is honoured (logged, not exported); roots are sampled.
      sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
      spanProcessors: [
        // Every option explicit, so the process environment's OTEL_BSP_* cannot change them.
        new BatchSpanProcessor(this.exporter, {
          maxQueueSize: o.maxQueue ?? 2048,
          maxExportBatchSize: o.maxBatch ?? 512,
          scheduledDelayMillis: o.flushIntervalMs ?? 1000,
          // The exporter gives up at timeoutMs (retries included); the processor waits a little longer.
          exportTimeoutMillis: timeoutMs + 1000,
        }),
      ],
    });
    this.tracer = this.provider.getTracer(SCOPE);
  }

  /** Spans the collector accepted. */
  get exported(): number {
    return this.exporter.exported;
  }

  /** Spans lost to failed exports (after the exporter's retries). */
  get failed(): number {
    return this.exporter.failed;
  }

  /**
   * Exports what is queued and waits for the exports already under way; never rejects (a
   * failure is counted and logged by the exporter). The SDK's forceFlush alone resolves at once
   * when its timer has just handed the queue to an export that is still in flight.
   */
  async flush(): Promise<void> {
    await this.provider.forceFlush().catch(() => undefined);
    await this.exporter.settled();
  }

  /** Flushes what is queued and stops the provider, within timeoutMs. */
  async shutdown(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.provider.shutdown().catch(() => undefined), // as flush(): failed exports are counted and logged by the exporter
      new Promise<void>((r) => {
        timer = setTimeout(r, timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}
