/** The Node.js error code (ECONNREFUSED, …) somewhere in an error's cause chain. */
export declare function networkCause(err: unknown): string | undefined;
/** The server's stable reason (google.rpc.ErrorInfo), when it gave one. */
export declare function errorReason(err: unknown): string | undefined;
/** The server could not be reached at all (as opposed to answering with an error). */
export declare function isUnreachable(err: unknown): boolean;
/**
 * A failure that says nothing about the call's outcome: the connection dropped or was refused,
 * or the server was stopping (UNAVAILABLE). Another attempt, on this or another instance, may
 * succeed.
 */
export declare function isTransient(err: unknown): boolean;
/**
 * Failures after which a stream is opened again where it stopped: transient ones, a subscriber
 * that fell behind (RESOURCE_EXHAUSTED), ABORTED, and a stream the transport cut without a
 * status (no ErrorInfo: INTERNAL, UNKNOWN, CANCELED not asked for by the caller).
 */
export declare function isResumable(err: unknown): boolean;
