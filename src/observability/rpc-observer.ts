/**
 * The contract between the call pipeline and whoever watches RPCs complete (metrics, tracing).
 * It is defined here, below transport/, so that observers depend on a small read-only view of a
 * call rather than on the pipeline's Call class; transport/'s Call implements ObservedCall.
 */
import type { DescMethod } from "@bufbuild/protobuf";

export type RpcProtocol = "grpc" | "connect" | "grpc-web";

/** What an observer may read of a finished call. */
export interface ObservedCall {
  readonly entry: {
    readonly method: DescMethod;
    /** "/berth.v1.WorkspaceService/GetWorkspace" */
    readonly path: string;
  };
  readonly protocol: RpcProtocol;
  /** performance.now() at start. */
  readonly start: number;
  requestHeader(name: string): string | undefined;
}

/**
 * Sees every RPC of both transports once, at its completion, before its log line is written
 * (metrics, tracing). It may add fields to `line` (trace_id, span_id). Must be cheap and must
 * not throw: it runs on every call, the hot paths included.
 */
export interface RpcObserver {
  rpcEnded(call: ObservedCall, code: number, seconds: number, line: Record<string, unknown>): void;
}
