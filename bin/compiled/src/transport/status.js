/**
 * Maps failures to RPC statuses, the same way for every transport.
 *
 * - A BerthError becomes the status code of its kind, its message, a google.rpc.ErrorInfo
 *   {reason, domain: "berth", metadata} and, when it has violations, a google.rpc.BadRequest.
 * - Once a call has been aborted (client cancel, deadline, server shutdown) whatever the
 *   handler throws is reported as the abort: CANCELLED, DEADLINE_EXCEEDED or UNAVAILABLE.
 * - Anything else is INTERNAL "internal error"; the real error is only logged (by the pipeline).
 *
 * Code numbers are gRPC's, which equal the numbers of @connectrpc/connect's `Code` enum.
 */
import { create } from "@bufbuild/protobuf";
import { BerthError, QuotaExceeded } from "../platform/errors.js";
import { BadRequestSchema, ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
/** gRPC status codes (identical to Connect's `Code` numbers). */
export const GrpcCode = {
    OK: 0,
    CANCELLED: 1,
    UNKNOWN: 2,
    INVALID_ARGUMENT: 3,
    DEADLINE_EXCEEDED: 4,
    NOT_FOUND: 5,
    ALREADY_EXISTS: 6,
    PERMISSION_DENIED: 7,
    RESOURCE_EXHAUSTED: 8,
    FAILED_PRECONDITION: 9,
    ABORTED: 10,
    OUT_OF_RANGE: 11,
    UNIMPLEMENTED: 12,
    INTERNAL: 13,
    UNAVAILABLE: 14,
    DATA_LOSS: 15,
    UNAUTHENTICATED: 16,
};
/** Index = code number → "NOT_FOUND" etc. (used in log lines). */
export const CODE_NAMES = Object.keys(GrpcCode);
/** The name of a gRPC status code, or of a Connect `Code` (the same numbers). */
export function codeName(code) {
    return CODE_NAMES[code] ?? "UNKNOWN";
}
export const KIND_TO_CODE = {
    invalid_argument: GrpcCode.INVALID_ARGUMENT,
    not_found: GrpcCode.NOT_FOUND,
    already_exists: GrpcCode.ALREADY_EXISTS,
    failed_precondition: GrpcCode.FAILED_PRECONDITION,
    aborted: GrpcCode.ABORTED,
    resource_exhausted: GrpcCode.RESOURCE_EXHAUSTED,
    out_of_range: GrpcCode.OUT_OF_RANGE,
    permission_denied: GrpcCode.PERMISSION_DENIED,
    unauthenticated: GrpcCode.UNAUTHENTICATED,
    unavailable: GrpcCode.UNAVAILABLE,
    deadline_exceeded: GrpcCode.DEADLINE_EXCEEDED,
    cancelled: GrpcCode.CANCELLED,
    unimplemented: GrpcCode.UNIMPLEMENTED,
    internal: GrpcCode.INTERNAL,
};
export const ERROR_DOMAIN = "berth";
/**
 * A failed call, transport-neutral. Deliberately not an Error: no stack is captured on the
 * hot path. Transports turn it into grpc-js status + `grpc-status-details-bin`, or a ConnectError.
 */
export class RpcStatus {
    code;
    message;
    details;
    statusBin;
    constructor(code, message, details = [], 
    /**
     * A google.rpc.Status as received from another instance (a forwarded call's
     * grpc-status-details-bin): sent on as it is, instead of encoding `details`.
     */
    statusBin) {
        this.code = code;
        this.message = message;
        this.details = details;
        this.statusBin = statusBin;
    }
    get codeName() {
        return codeName(this.code);
    }
}
/** Abort reasons put on a call's signal; the pipeline maps errors thrown after them to these. */
export const ABORT_CANCELLED = new BerthError("cancelled", "CANCELLED", "call cancelled by the client");
export const ABORT_DEADLINE = new BerthError("deadline_exceeded", "DEADLINE_EXCEEDED", "deadline exceeded");
export const ABORT_SHUTDOWN = new BerthError("unavailable", "SERVER_SHUTTING_DOWN", "server shutting down");
/** Before the server is ready (ports bound, start-up reconcile still running): retry shortly. */
export const NOT_READY = new BerthError("unavailable", "SERVER_STARTING", "server starting; retry shortly");
/** The status of a BerthError: code, message, ErrorInfo, (with violations) BadRequest and (a quota) QuotaFailure and RetryInfo. */
export function statusFromBerthError(err) {
    const details = [
        {
            desc: ErrorInfoSchema,
            value: create(ErrorInfoSchema, { reason: err.reason, domain: ERROR_DOMAIN, metadata: { ...err.metadata } }),
        },
    ];
    if (err.violations.length > 0) {
        details.push({
            desc: BadRequestSchema,
            value: create(BadRequestSchema, {
                fieldViolations: err.violations.map((v) => ({ field: v.field, reason: v.reason, description: v.description })),
            }),
        });
    }
    if (err instanceof QuotaExceeded) {
        details.push({ desc: QuotaFailureSchema, value: create(QuotaFailureSchema, { violations: err.quota.map((q) => ({ subject: q.subject, description: q.description })) }) });
        if (err.retryAfterMs !== undefined) {
            const ms = Math.max(0, Math.round(err.retryAfterMs));
            details.push({ desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryDelay: { seconds: BigInt(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 } }) });
        }
    }
    return new RpcStatus(KIND_TO_CODE[err.kind] ?? GrpcCode.INTERNAL, err.message, details);
}
const INTERNAL_STATUS = new RpcStatus(GrpcCode.INTERNAL, "internal error");
/**
 * Maps a thrown value to a status. `abortReason` is the call's abort reason, if it was aborted:
 * it wins over whatever the handler threw. `internal` tells the caller to log the real error.
 */
export function toRpcStatus(err, abortReason) {
    if (abortReason !== undefined)
        return { status: statusFromBerthError(abortReason), internal: false };
    if (err instanceof RpcStatus)
        return { status: err, internal: false };
    if (err instanceof BerthError)
        return { status: statusFromBerthError(err), internal: err.kind === "internal" };
    return { status: INTERNAL_STATUS, internal: true };
}
