/**
 * The default walker: the walk runs in a dedicated worker thread (node:worker_threads).
 *
 * Design: one worker per in-flight walk, drawn from a small pool of idle workers.
 *  - A walk takes an idle worker if there is one, otherwise spawns a new one. It never waits
 *    for a busy worker, so a wedged walk (a worker blocked in a syscall on a dead mount, which
 *    nothing in JavaScript can interrupt) can never hold up a walk of another root. A shared
 *    fixed pool with a queue would do exactly that once its workers were all wedged.
 *  - A worker that answers goes back to the idle pool (at most maxIdleWorkers, each unref'd
 *    and terminated after idleTimeoutMs), so steady-state turns pay no thread start-up.
 *  - A worker that never answers is never reused and never counted as idle: it is lost, as
 *    the reference accepts. The service's single-flight marker bounds that to one worker per
 *    wedged root, and maxBusyWorkers bounds the total: past it a walk fails at once (EAGAIN)
 *    rather than spawning threads without end when a whole mount goes away.
 *  - Workers are unref'd: a walk in flight never keeps the process alive.
 *
 * Not libuv's threadpool: fs.promises and dns.lookup share its four threads; four wedged
 * reads there stall every fs and DNS call of the process. The walk's fs calls are sync calls
 * on the worker's own thread, which is the fastest way to walk a tree in Node anyway.
 */
import { Worker } from "node:worker_threads";
import type { WalkOptions, WalkOutcome } from "./walk-core.mjs";
import type { WalkResult, Walker } from "./types.js";

export interface WorkerWalkerOptions {
  /** Idle workers kept for reuse (default 1). */
  readonly maxIdleWorkers?: number;
  /** An idle worker is terminated after this long (default 30 s). */
  readonly idleTimeoutMs?: number;
  /** Spawn one idle worker now, off any request path, so the first walk pays no thread start (default false). */
  readonly prewarm?: boolean;
  /** Walks in flight at once, wedged ones included (default 64). Past it a walk fails with EAGAIN. */
  readonly maxBusyWorkers?: number;
}

export interface WorkerWalker extends Walker {
  /** Terminates idle workers and stops reusing any. Wedged workers cannot be reclaimed. */
  close(): Promise<void>;
  stats(): { busy: number; idle: number; spawned: number };
}

interface IdleWorker {
  worker: Worker;
  timer: NodeJS.Timeout;
}

const WORKER_URL = new URL("./walk-worker.mjs", import.meta.url);

export function createWorkerWalker(options: WorkerWalkerOptions = {}): WorkerWalker {
  const maxIdle = options.maxIdleWorkers ?? 1;
  const idleTimeoutMs = options.idleTimeoutMs ?? 30_000;
  const maxBusy = options.maxBusyWorkers ?? 64;
  const idle: IdleWorker[] = [];
  const busy = new Set<Worker>();
  let spawned = 0;
  let nextId = 1;
  let closed = false;

  function spawn(): Worker {
    spawned++;
    // execArgv: [] — the worker is plain JavaScript; inheriting the parent's TS loader (tsx)
    // would only slow its start.
    const worker = new Worker(WORKER_URL, { name: "berth-map-walk", execArgv: [] });
    worker.unref();
    return worker;
  }

  function release(worker: Worker): void {
    busy.delete(worker);
    if (closed || idle.length >= maxIdle) {
      void worker.terminate();
      return;
    }
    const entry: IdleWorker = {
      worker,
      timer: setTimeout(() => {
        const i = idle.indexOf(entry);
        if (i !== -1) idle.splice(i, 1);
        void worker.terminate();
      }, idleTimeoutMs),
    };
    entry.timer.unref();
    idle.push(entry);
  }

  const walk = (root: string, walkOptions: WalkOptions): Promise<WalkResult> => {
    if (closed) return Promise.resolve({ kind: "error", code: "ECLOSED", message: "the map walker is closed" });
    if (busy.size >= maxBusy) {
      return Promise.resolve({ kind: "error", code: "EAGAIN", message: `${busy.size} map walks are already in flight (wedged filesystems?)` });
    }
    const reused = idle.pop();
    if (reused) clearTimeout(reused.timer);
    let worker: Worker;
    try {
      worker = reused?.worker ?? spawn();
    } catch (err) {
      return Promise.resolve({ kind: "error", code: "EWORKER", message: `cannot start the map worker: ${(err as Error).message}` });
    }
    busy.add(worker);
    const id = nextId++;
    return new Promise<WalkResult>((resolve) => {
      const cleanup = (): void => {
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
      };
      const onMessage = (msg: { id: number; outcome: WalkOutcome }): void => {
        if (msg.id !== id) return;
        cleanup();
        release(worker);
        resolve(fromWire(msg.outcome));
      };
      const onError = (err: Error): void => {
        cleanup();
        busy.delete(worker);
        void worker.terminate();
        resolve({ kind: "error", code: "EWORKER", message: `the map worker failed: ${err.message}` });
      };
      const onExit = (code: number): void => {
        cleanup();
        busy.delete(worker);
        resolve({ kind: "error", code: "EWORKER", message: `the map worker exited (code ${code})` });
      };
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      worker.postMessage({ id, root, options: walkOptions });
    });
  };

  if (options.prewarm && maxIdle > 0) {
    try {
      release(spawn());
    } catch {
      // the first walk will try again
    }
  }

  return Object.assign(walk, {
    async close(): Promise<void> {
      closed = true;
      const toStop = idle.splice(0);
      for (const { timer } of toStop) clearTimeout(timer);
      await Promise.all(toStop.map(({ worker }) => worker.terminate()));
    },
    stats() {
      return { busy: busy.size, idle: idle.length, spawned };
    },
  });
}

function fromWire(outcome: WalkOutcome): WalkResult {
  if (outcome.kind !== "ok") return outcome;
  return { kind: "ok", listing: outcome.listing, total: outcome.total };
}
