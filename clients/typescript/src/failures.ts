/** How a client tells a failure worth another attempt from the server's answer. */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";

const NETWORK_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

/** The Node.js error code (ECONNREFUSED, …) somewhere in an error's cause chain. */
export function networkCause(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return code;
  }
  return undefined;
}

/** The server's stable reason (google.rpc.ErrorInfo), when it gave one. */
export function errorReason(err: unknown): string | undefined {
  return err instanceof ConnectError ? err.findDetails(ErrorInfoSchema)[0]?.reason : undefined;
}

/** The server could not be reached at all (as opposed to answering with an error). */
export function isUnreachable(err: unknown): boolean {
  if (err instanceof ConnectError && errorReason(err) !== undefined) return false;
  return networkCause(err) !== undefined;
}

/**
 * A failure that says nothing about the call's outcome: the connection dropped or was refused,
 * or the server was stopping (UNAVAILABLE). Another attempt, on this or another instance, may
 * succeed.
 */
export function isTransient(err: unknown): boolean {
  if (!(err instanceof ConnectError)) return networkCause(err) !== undefined;
  if (err.code === Code.Unavailable) return true;
  const transportLevel = errorReason(err) === undefined;
  return transportLevel && (err.code === Code.Internal || err.code === Code.Unknown) && networkCause(err) !== undefined;
}

/**
 * Failures after which a stream is opened again where it stopped: transient ones, a subscriber
 * that fell behind (RESOURCE_EXHAUSTED), ABORTED, and a stream the transport cut without a
 * status (no ErrorInfo: INTERNAL, UNKNOWN, CANCELED not asked for by the caller).
 */
export function isResumable(err: unknown): boolean {
  if (isTransient(err)) return true;
  if (!(err instanceof ConnectError)) return false;
  if (err.code === Code.ResourceExhausted || err.code === Code.Aborted) return true;
  return errorReason(err) === undefined && (err.code === Code.Internal || err.code === Code.Unknown || err.code === Code.Canceled);
}
