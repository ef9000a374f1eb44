/**
 * Trace context of RPCs, at the pipeline's completion point (src/transport/pipeline.ts RpcObserver).
 *
 * - An incoming `traceparent` (gRPC metadata or HTTP header; both transports) names the caller's
 *   trace: the RPC's log line gets `trace_id` and `span_id` (a new span id, this RPC's server span,
 *   whose parent is the caller's span).
 * - With an exporter (OTEL_EXPORTER_OTLP_ENDPOINT), every RPC is a SERVER span: child of the
 *   incoming context, or the root of a new trace when there is none. Parent-based sampling: an
 *   incoming traceparent with the sampled flag off is logged but not exported.
 * - Without an exporter and without a traceparent, nothing is done (no ids, no allocation).
 */
import type { ObservedCall as Call, RpcObserver } from "../rpc-observer.js";
import type { OtlpHttpExporter } from "./otlp-exporter.js";
import { newSpanId, newTraceId, parseTraceParent } from "./trace-context.js";

const SPAN_KIND_SERVER = 2;
/** gRPC codes that mark a server span as an error (OpenTelemetry RPC semantic conventions). */
const SERVER_ERROR_CODES = new Set([2, 4, 12, 13, 14, 15]);

export class RpcTracer implements RpcObserver {
  constructor(private readonly exporter: OtlpHttpExporter | undefined) {}

  rpcEnded(call: Call, code: number, seconds: number, line: Record<string, unknown>): void {
    const parent = parseTraceParent(call.requestHeader("traceparent"));
    const exporter = this.exporter;
    if (parent === undefined && exporter === undefined) return;
    const traceId = parent?.traceId ?? newTraceId();
    const spanId = newSpanId();
    line["trace_id"] = traceId;
    line["span_id"] = spanId;
    if (exporter === undefined || (parent !== undefined && !parent.sampled)) return;
    const startMs = performance.timeOrigin + call.start;
    const method = call.entry.method;
    const error = SERVER_ERROR_CODES.has(code);
    exporter.enqueue({
      traceId,
      spanId,
      parentSpanId: parent?.parentSpanId ?? "",
      // OpenTelemetry's RPC span name: "$package.$service/$method".
      name: call.entry.path.slice(1),
      kind: SPAN_KIND_SERVER,
      startMs,
      endMs: startMs + seconds * 1000,
      attributes: {
        "rpc.system": call.protocol === "grpc" ? "grpc" : "connect_rpc",
        "rpc.service": method.parent.typeName,
        "rpc.method": method.name,
        "rpc.grpc.status_code": code,
        "berth.protocol": call.protocol,
        "berth.session_id": typeof line["sessionId"] === "string" ? line["sessionId"] : undefined,
      },
      statusCode: error ? 2 : 0,
      ...(error ? { statusMessage: String(line["code"]) } : {}),
    });
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
