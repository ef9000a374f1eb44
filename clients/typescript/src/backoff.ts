/** Capped, jittered exponential backoff, and a sleep that an abort signal cuts short. */

export interface BackoffOptions {
  /** First delay, in milliseconds (default 100). */
  readonly initialMs?: number;
  /** Largest delay, in milliseconds (default 5000). */
  readonly maxMs?: number;
}

/** The delay before attempt n+1 (n from 0): initial·2ⁿ capped, times a random factor in [0.5, 1). */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const initial = options.initialMs ?? 100;
  const max = options.maxMs ?? 5_000;
  return Math.min(max, initial * 2 ** attempt) * (0.5 + Math.random() / 2);
}

/** Resolves after ms, or at once (false) when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
