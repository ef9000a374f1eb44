import { backoffDelay, sleep } from "./backoff.js";
import { isTransient } from "./failures.js";
import { isIdempotent } from "./idempotent.js";
export function retryInterceptor(options = {}) {
    const maxAttempts = Math.max(1, options.maxAttempts ?? 4);
    return (next) => async (req) => {
        if (req.stream || maxAttempts === 1 || !isIdempotent(req.method, req.message))
            return next(req);
        for (let attempt = 0;; attempt++) {
            try {
                return await next(req);
            }
            catch (err) {
                if (attempt + 1 >= maxAttempts || !isTransient(err) || req.signal.aborted)
                    throw err;
                if (!(await sleep(backoffDelay(attempt, options), req.signal)))
                    throw err;
            }
        }
    };
}
