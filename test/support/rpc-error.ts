/** One view of an RPC failure, whichever client (grpc-js or Connect) raised it. */
import { ConnectError } from "@connectrpc/connect";
import { codeName } from "../../src/transport/status.js";
import { BadRequestSchema, ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema, type QuotaFailure, type RetryInfo } from "../../gen/google/rpc/error_details_pb.js";
import { GrpcCallError } from "./grpc-client.js";

export interface RpcFailure {
  /** The gRPC status name, e.g. "FAILED_PRECONDITION". */
  readonly code: string;
  readonly message: string;
  readonly reason: string | undefined;
  readonly metadata: Record<string, string>;
  readonly fields: string[];
  /** google.rpc.QuotaFailure violations, when sent. */
  readonly quota: { subject: string; description: string }[] | undefined;
  /** google.rpc.RetryInfo's delay in milliseconds, when sent. */
  readonly retryDelayMs: number | undefined;
}

function delayMs(r: RetryInfo | undefined): number | undefined {
  const d = r?.retryDelay;
  return d === undefined ? undefined : Number(d.seconds) * 1000 + Math.round(d.nanos / 1_000_000);
}

function violations(q: QuotaFailure | undefined): RpcFailure["quota"] {
  return q?.violations.map((v) => ({ subject: v.subject, description: v.description }));
}

export function rpcFailure(err: unknown): RpcFailure {
  if (err instanceof GrpcCallError) {
    const info = err.errorInfo;
    return {
      code: err.codeName,
      message: err.details,
      reason: info?.reason,
      metadata: { ...(info?.metadata ?? {}) },
      fields: err.badRequest?.fieldViolations.map((v) => v.field) ?? [],
      quota: violations(err.statusDetails.find((m): m is QuotaFailure => m.$typeName === QuotaFailureSchema.typeName)),
      retryDelayMs: delayMs(err.statusDetails.find((m): m is RetryInfo => m.$typeName === RetryInfoSchema.typeName)),
    };
  }
  if (err instanceof ConnectError) {
    const info = err.findDetails(ErrorInfoSchema)[0];
    return {
      code: codeName(err.code),
      message: err.rawMessage,
      reason: info?.reason,
      metadata: { ...(info?.metadata ?? {}) },
      fields: err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field) ?? [],
      quota: violations(err.findDetails(QuotaFailureSchema)[0]),
      retryDelayMs: delayMs(err.findDetails(RetryInfoSchema)[0]),
    };
  }
  throw err;
}

/** Awaits a call that must fail and returns how it failed. */
export async function failure(call: Promise<unknown>): Promise<RpcFailure> {
  try {
    await call;
  } catch (err) {
    return rpcFailure(err);
  }
  throw new Error("expected the call to fail, but it succeeded");
}
