/**
 * Domain failures. The domain knows nothing of gRPC: it says what kind of failure this is
 * and gives a stable machine-readable reason; src/transport/status.ts maps kinds to status codes and puts
 * the reason and metadata into a google.rpc.ErrorInfo (and violations into a BadRequest).
 */
import type { Reason } from "./error-reasons.js";

export type { Reason } from "./error-reasons.js";

export type ErrorKind =
  | "invalid_argument"
  | "not_found"
  | "already_exists"
  | "failed_precondition"
  | "aborted"
  | "resource_exhausted"
  | "out_of_range"
  | "permission_denied"
  | "unauthenticated"
  | "unavailable"
  | "deadline_exceeded"
  | "cancelled"
  | "unimplemented"
  | "internal";

/** One invalid field of a request; `field` is the proto field path (snake_case). */
export interface FieldViolation {
  readonly field: string;
  readonly reason: string;
  readonly description: string;
}

export class BerthError extends Error {
  constructor(
    readonly kind: ErrorKind,
    /** UPPER_SNAKE_CASE, stable: clients switch on it; one of src/platform/error-reasons.ts. */
    readonly reason: Reason,
    message: string,
    readonly metadata: Readonly<Record<string, string>> = {},
    readonly violations: readonly FieldViolation[] = [],
  ) {
    super(message);
    this.name = "BerthError";
  }
}

/** The quota a refused request ran into: what it is counted on, in words, and when to retry. */
export interface QuotaViolation {
  /** What the quota is counted on, e.g. "agent:claude-7" or "workspace:<id>". */
  readonly subject: string;
  /** The limit and the current use, in words. */
  readonly description: string;
}

/**
 * RESOURCE_EXHAUSTED because a fair-use limit was reached: besides the ErrorInfo (reason, metadata
 * naming the limit and the use), the transport attaches a google.rpc.QuotaFailure and, when a
 * retry may succeed after a while, a google.rpc.RetryInfo.
 */
export class QuotaExceeded extends BerthError {
  constructor(
    reason: Reason,
    message: string,
    metadata: Readonly<Record<string, string>>,
    readonly quota: readonly QuotaViolation[],
    /** When a retry may succeed; undefined: not by waiting alone. */
    readonly retryAfterMs?: number,
  ) {
    super("resource_exhausted", reason, message, metadata);
  }
}

export function invalidArgument(violations: readonly FieldViolation[]): BerthError {
  const first = violations[0];
  const message = first
    ? `invalid ${first.field}: ${first.description}` + (violations.length > 1 ? ` (and ${violations.length - 1} more)` : "")
    : "invalid request";
  return new BerthError("invalid_argument", "INVALID_ARGUMENT", message, first ? { field: first.field } : {}, violations);
}

export function notFound(reason: Reason, message: string, metadata: Record<string, string> = {}): BerthError {
  return new BerthError("not_found", reason, message, metadata);
}

export function failedPrecondition(reason: Reason, message: string, metadata: Record<string, string> = {}): BerthError {
  return new BerthError("failed_precondition", reason, message, metadata);
}

export function permissionDenied(reason: Reason, message: string, metadata: Record<string, string> = {}): BerthError {
  return new BerthError("permission_denied", reason, message, metadata);
}

export function unauthenticated(reason: Reason, message: string, metadata: Record<string, string> = {}): BerthError {
  return new BerthError("unauthenticated", reason, message, metadata);
}
