export class BerthError extends Error {
    kind;
    reason;
    metadata;
    violations;
    constructor(kind, 
    /** UPPER_SNAKE_CASE, stable: clients switch on it; one of src/platform/error-reasons.ts. */
    reason, message, metadata = {}, violations = []) {
        super(message);
        this.kind = kind;
        this.reason = reason;
        this.metadata = metadata;
        this.violations = violations;
        this.name = "BerthError";
    }
}
/**
 * RESOURCE_EXHAUSTED because a fair-use limit was reached: besides the ErrorInfo (reason, metadata
 * naming the limit and the use), the transport attaches a google.rpc.QuotaFailure and, when a
 * retry may succeed after a while, a google.rpc.RetryInfo.
 */
export class QuotaExceeded extends BerthError {
    quota;
    retryAfterMs;
    constructor(reason, message, metadata, quota, 
    /** When a retry may succeed; undefined: not by waiting alone. */
    retryAfterMs) {
        super("resource_exhausted", reason, message, metadata);
        this.quota = quota;
        this.retryAfterMs = retryAfterMs;
    }
}
export function invalidArgument(violations) {
    const first = violations[0];
    const message = first
        ? `invalid ${first.field}: ${first.description}` + (violations.length > 1 ? ` (and ${violations.length - 1} more)` : "")
        : "invalid request";
    return new BerthError("invalid_argument", "INVALID_ARGUMENT", message, first ? { field: first.field } : {}, violations);
}
export function notFound(reason, message, metadata = {}) {
    return new BerthError("not_found", reason, message, metadata);
}
export function failedPrecondition(reason, message, metadata = {}) {
    return new BerthError("failed_precondition", reason, message, metadata);
}
export function permissionDenied(reason, message, metadata = {}) {
    return new BerthError("permission_denied", reason, message, metadata);
}
export function unauthenticated(reason, message, metadata = {}) {
    return new BerthError("unauthenticated", reason, message, metadata);
}
