/**
 * An interceptor that sends an idempotent unary call again after a transient failure, with
 * backoff, within the call's own deadline and abort signal (they cover every attempt).
 */
import type { Interceptor } from "@connectrpc/connect";
import { type BackoffOptions } from "./backoff.js";
export interface RetryOptions extends BackoffOptions {
    /** Attempts in all, the first included (default 4; 1 turns retries off). */
    readonly maxAttempts?: number;
}
export declare function retryInterceptor(options?: RetryOptions): Interceptor;
