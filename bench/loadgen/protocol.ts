/** Messages between the load generator's parent (bench/loadgen/index.ts) and its worker processes. */

/** mcp: a JSON-RPC POST to /mcp (Streamable HTTP, JSON answer); a tool error in the answer counts as an error. */
export type LoadKind = "grpc" | "connect" | "mcp" | "pg";

export interface WorkerSpec {
  readonly kind: LoadKind;
  /** http://host:port of the HTTP/2 server (grpc, connect). */
  readonly url?: string;
  /** :path of the RPC, e.g. /grpc.health.v1.Health/Check (grpc, connect). */
  readonly path?: string;
  /** Pre-encoded request bodies, base64: gRPC frames (grpc) or bare messages (connect); used round-robin. */
  readonly bodies?: readonly string[];
  /** pg: connection string, pool size of this worker and the statements of one transaction. */
  readonly pgUrl?: string;
  readonly pgPoolMax?: number;
  /** pg: the statements between BEGIN and COMMIT; $1, $2 get fresh UUIDs, $3 a short text. */
  readonly pgStatements?: readonly string[];
  readonly connections: number;
  /** Requests in flight in this worker (closed loop). */
  readonly concurrency: number;
  readonly warmupMs: number;
  readonly durationMs: number;
  /** Count mode: stop after this many requests (warm-up and duration ignored). */
  readonly totalRequests?: number;
  readonly index: number;
}

export type ToWorker = { readonly type: "spec"; readonly spec: WorkerSpec } | { readonly type: "go" };

export interface WorkerResult {
  readonly requests: number;
  readonly errors: number;
  /** error kind → count (grpc-status, HTTP status or exception message). */
  readonly errorKinds: Record<string, number>;
  /** Latencies in microseconds, hdr-histogram-js compressed base64. */
  readonly histogram: string;
  readonly elapsedMs: number;
  /** CPU time (user + system) this worker used over the whole run, ms: shows whether the generator was the bottleneck. */
  readonly cpuMs: number;
}

export type FromWorker =
  | { readonly type: "ready" }
  | { readonly type: "result"; readonly result: WorkerResult }
  | { readonly type: "failed"; readonly error: string };
