import { backoffDelay, sleep } from "./backoff.js";
import { isResumable } from "./failures.js";
/** A stream that lived this long starts the backoff afresh. */
const HEALTHY_MS = 10_000;
export async function* resumingEvents(workspaces, request, options = {}) {
    const backoff = { initialMs: options.initialMs ?? 200, maxMs: options.maxMs ?? 5_000 };
    let last = request.afterSeq ?? 0n;
    let accepted = false;
    let attempt = 0;
    const { signal } = options;
    while (!signal?.aborted) {
        const openedAt = Date.now();
        let error;
        try {
            const onHeader = () => {
                accepted = true;
                options.onConnect?.();
            };
            for await (const { event } of workspaces.watchEvents({ ...request, afterSeq: last }, { signal, onHeader })) {
                if (!event || event.seq <= last)
                    continue; // never yield an event twice
                last = event.seq;
                attempt = 0;
                yield event;
            }
        }
        catch (err) {
            if (signal?.aborted)
                return;
            if (!accepted || !isResumable(err))
                throw err;
            error = err;
        }
        if (Date.now() - openedAt > HEALTHY_MS)
            attempt = 0;
        const delayMs = backoffDelay(attempt++, backoff);
        options.onReconnect?.({ afterSeq: last, error, delayMs });
        if (!(await sleep(delayMs, signal)))
            return;
    }
}
