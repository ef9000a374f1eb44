/**
 * An interceptor that sends an idempotent unary call again after a transient failure, with
 * backoff, within the call's own deadline and abort signal (they cover every attempt).
 */
import type { Interceptor } from "@connectrpc/connect";
import { backoffDelay, sleep, type BackoffOptions } from "./backoff.js";
import { isTransient } from "./failures.js";
import { isIdempotent } from "./idempotent.js";

export interface RetryOptions extends BackoffOptions {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  readonly maxAttempts?: number;
}

export function retryInterceptor(options: RetryOptions = {}): Interceptor {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 4);
  return (next) => async (req) => {
    if (req.stream || maxAttempts === 1 || !isIdempotent(req.method, req.message)) return next(req);
    for (let attempt = 0; ; attempt++) {
      try {
        return await next(req);
      } catch (err) {
        if (attempt + 1 >= maxAttempts || !isTransient(err) || req.signal.aborted) throw err;
        if (!(await sleep(backoffDelay(attempt, options), req.signal))) throw err;
      }
    }
  };
}
