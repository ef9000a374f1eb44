import { backoffDelay, sleep } from "./backoff.js";
import { isResumable, isTransient } from "./failures.js";
export function holdSession(workspaces, sessionId, options = {}) {
    const abort = new AbortController();
    const { signal } = abort;
    let markReady;
    const ready = new Promise((resolve) => (markReady = resolve));
    const state = { leaseMs: undefined, workspace: undefined };
    async function heartbeats() {
        let failures = 0;
        while (!signal.aborted) {
            let wait;
            try {
                const res = await workspaces.heartbeat({ sessionId }, { signal, timeoutMs: 10_000 });
                state.leaseMs = res.leaseMs;
                markReady();
                failures = 0;
                wait = options.intervalMs ?? Math.max(100, Math.floor(res.leaseMs / 3));
            }
            catch (err) {
                if (signal.aborted)
                    return;
                if (!isTransient(err))
                    throw err;
                options.onRetry?.(err);
                wait = backoffDelay(failures++, { initialMs: 200, maxMs: 2_000 });
            }
            await sleep(wait, signal);
        }
    }
    async function attached() {
        let failures = 0;
        while (!signal.aborted) {
            try {
                for await (const m of workspaces.attachSession({ sessionId }, { signal })) {
                    failures = 0;
                    if (m.message.case === "workspace") {
                        state.workspace = m.message.value;
                        markReady();
                    }
                    else if (m.message.case === "event") {
                        options.onEvent?.(m.message.value);
                    }
                }
                return; // the server ended it: the session is no longer active
            }
            catch (err) {
                if (signal.aborted)
                    return;
                if (!isResumable(err))
                    throw err;
                options.onRetry?.(err);
                await sleep(backoffDelay(failures++, { initialMs: 200, maxMs: 2_000 }), signal);
            }
        }
    }
    const done = options.via === "attach" ? attached() : heartbeats();
    // A hold that fails before it is ready must not leave `ready` pending for ever.
    done.then(markReady, markReady);
    return {
        ready,
        done,
        get leaseMs() {
            return state.leaseMs;
        },
        get workspace() {
            return state.workspace;
        },
        async close() {
            abort.abort();
            await done.catch(() => undefined);
        },
    };
}
