/**
 * Trace context of RPCs, at the pipeline's completion point (src/transport/pipeline.ts RpcObserver),
 * through the OpenTelemetry API with explicit contexts (no global context manager).
 *
 * - An incoming W3C `traceparent` (gRPC metadata or HTTP header; both transports), parsed by the
 *   SDK's W3CTraceContextPropagator, names the caller's trace: the RPC's log line gets `trace_id`
 *   and `span_id` (a new span id, this RPC's server span, whose parent is the caller's span).
 *   An invalid header is ignored (a new trace starts when exporting).
 * - With a tracer (OTEL_EXPORTER_OTLP_ENDPOINT set), every RPC is a SERVER span started and ended
 *   here with the call's own start and end times: child of the incoming context, or the root of a
 *   new trace. The provider's parent-based sampler decides: an incoming traceparent with the
 *   sampled flag off gets a non-recording span, logged but not exported.
 * - Without a tracer and without a traceparent, nothing is done (no ids, no allocation).
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type TextMapGetter, type Tracer } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { RandomIdGenerator } from "@opentelemetry/sdk-trace-base";
import type { ObservedCall as Call, RpcObserver } from "../rpc-observer.js";

/** gRPC codes that mark a server span as an error (OpenTelemetry RPC semantic conventions). */
const SERVER_ERROR_CODES = new Set([2, 4, 12, 13, 14, 15]);

const propagator = new W3CTraceContextPropagator();
/** Span ids for the log line when there is a caller's trace but no export. */
const ids = new RandomIdGenerator();

/** Reads `traceparent` / `tracestate` from the call's request headers (gRPC metadata or HTTP). */
const CALL_HEADERS: TextMapGetter<Call> = {
  get: (call, key) => call.requestHeader(key),
  keys: () => [],
};

/** The caller's context from its headers: ROOT_CONTEXT plus the remote span context, if valid. */
export function incomingContext(call: Call): Context {
  return propagator.extract(ROOT_CONTEXT, call, CALL_HEADERS);
}

export class RpcTracer implements RpcObserver {
  constructor(private readonly tracer: Tracer | undefined) {}

  rpcEnded(call: Call, code: number, seconds: number, line: Record<string, unknown>): void {
    const header = call.requestHeader("traceparent");
    const tracer = this.tracer;
    if (header === undefined && tracer === undefined) return;
    const parent = header === undefined ? ROOT_CONTEXT : incomingContext(call);
    if (tracer === undefined) {
      const remote = trace.getSpanContext(parent);
      if (remote === undefined) return;
      line["trace_id"] = remote.traceId;
      line["span_id"] = ids.generateSpanId();
      return;
    }
    const method = call.entry.method;
    const attributes: Attributes = {
      "rpc.system": call.protocol === "grpc" ? "grpc" : "connect_rpc",
      "rpc.service": method.parent.typeName,
      "rpc.method": method.name,
      "rpc.grpc.status_code": code,
      "berth.protocol": call.protocol,
    };
    if (typeof line["sessionId"] === "string") attributes["berth.session_id"] = line["sessionId"];
    // Epoch milliseconds (fractional): the call's start on the performance clock.
    const startMs = performance.timeOrigin + call.start;
    // OpenTelemetry's RPC span name: "$package.$service/$method".
    const span = tracer.startSpan(call.entry.path.slice(1), { kind: SpanKind.SERVER, startTime: startMs, attributes }, parent);
    const ctx = span.spanContext();
    line["trace_id"] = ctx.traceId;
    line["span_id"] = ctx.spanId;
    // Not sampled (the caller's flag): a non-recording span, whose end exports nothing.
    if (!span.isRecording()) return;
    if (SERVER_ERROR_CODES.has(code)) span.setStatus({ code: SpanStatusCode.ERROR, message: String(line["code"]) });
    span.end(startMs + seconds * 1000);
  }
}

/** Several observers as one (metrics, then tracing). */
export function observers(...list: (RpcObserver | undefined)[]): RpcObserver | undefined {
  const present = list.filter((o): o is RpcObserver => o !== undefined);
  if (present.length <= 1) return present[0];
  return {
    rpcEnded(call, code, seconds, line) {
      for (const o of present) o.rpcEnded(call, code, seconds, line);
    },
  };
}
