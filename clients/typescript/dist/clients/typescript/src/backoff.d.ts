/** Capped, jittered exponential backoff, and a sleep that an abort signal cuts short. */
export interface BackoffOptions {
    /** First delay, in milliseconds (default 100). */
    readonly initialMs?: number;
    /** Largest delay, in milliseconds (default 5000). */
    readonly maxMs?: number;
}
/** The delay before attempt n+1 (n from 0): initial·2ⁿ capped, times a random factor in [0.5, 1). */
export declare function backoffDelay(attempt: number, options?: BackoffOptions): number;
/** Resolves after ms, or at once (false) when signal aborts. */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<boolean>;
