/**
 * Symbol diffs off the main thread: a fixed pool of worker threads (worker.ts) running the
 * tree-sitter parse and the symbol walk, which otherwise take about half of the main thread's
 * time on the write path.
 *
 * - Bounded: `workers` threads (default 2), never more; a request waits in its worker's queue.
 * - A path always goes to the same worker (a hash of the path), so the worker holding the path's
 *   last syntax tree parses the next version incrementally.
 * - A worker answers in order, one request at a time, so the oldest unanswered request of a
 *   worker is the one it is running (once the worker said it is ready: its start, which loads
 *   tsx, the grammars and warms them up, is not timed): if it has not answered within `answerTimeoutMs` (a parse the
 *   in-worker deadline could not stop), the worker is terminated and respawned, and that request
 *   is the whole-file unit — what a parse over the deadline gives in process. The requests queued
 *   behind it go to the new worker.
 * - A worker that dies (crash, out of memory) is respawned and the requests it held are sent to
 *   the new one. A request that was running when its worker died twice is the whole-file unit
 *   (the module's rule for a parse that throws), so content that kills the parser can still be
 *   written and the requests behind it are not lost.
 * - Workers are unref'd (a pool in use never keeps the process alive) and terminated by close();
 *   a diff after close fails with UNAVAILABLE.
 */
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { BerthError } from "../../platform/errors.js";
import { DEFAULT_PARSE_TIMEOUT_MS, languageForPath, wholeFileChange, type SymbolChange } from "./index.js";
import type { SymbolAnswer, SymbolRequest } from "./worker.js";

export interface SymbolPoolOptions {
  /** Worker threads (default: 2, or 1 on a single core). */
  readonly workers?: number;
  /**
   * How long the worker running a request may take to answer it before it is replaced (default
   * 5 s: well above the in-worker parse deadline of 200 ms and a cold worker's grammar load).
   */
  readonly answerTimeoutMs?: number;
  /** Told of every worker replaced (timeouts, crashes). */
  readonly onWorkerLost?: (info: { reason: string; path: string | undefined }) => void;
  /** Told when a started worker could not load some grammars (files of those languages are whole-file units). */
  readonly onGrammarsFailed?: (languages: readonly string[]) => void;
  /** The worker's module (tests: one that misbehaves). Default worker.ts. */
  readonly workerUrl?: URL;
}

/** What the write path needs of symbol extraction. */
export interface SymbolDiffer {
  /** The symbols a change of `path` adds, modifies or deletes (the whole-file unit when it has none). Never rejects but after close. */
  diff(path: string, old: Uint8Array | undefined, next: Uint8Array | undefined): Promise<SymbolChange[]>;
}

interface Pending {
  readonly req: SymbolRequest;
  readonly resolve: (changes: SymbolChange[]) => void;
  readonly reject: (err: Error) => void;
  /** Workers that died while running this request. */
  deaths: number;
}

interface Slot {
  worker: Worker | undefined;
  /** Sent to `worker`, in the order it answers them. */
  readonly queue: Pending[];
  timer: NodeJS.Timeout | undefined;
  /** The worker has started and warmed up: the oldest request's answer is timed from here. */
  ready: boolean;
}

const WORKER_URL = new URL("./worker.ts", import.meta.url);

/**
 * The worker is TypeScript, loaded through tsx's ESM API as the server itself is (bin/berth.js):
 * a worker does not inherit the parent's loader on Node 20. The API's ESM entry sits beside the
 * CommonJS one require.resolve finds.
 */
function bootstrap(workerUrl: URL): string {
  const require = createRequire(import.meta.url);
  const api = new URL("./index.mjs", pathToFileURL(require.resolve("tsx/esm/api"))).href;
  return `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl.href)}); });`;
}

function stopping(path: string): BerthError {
  return new BerthError("unavailable", "SERVER_SHUTTING_DOWN", `the server is stopping; ${path} was not written`, { path });
}

/** FNV-1a of the path: the same path, the same worker. */
function slotOf(path: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193);
  return (h >>> 0) % n;
}

export class SymbolPool implements SymbolDiffer {
  private readonly slots: Slot[];
  private readonly answerTimeoutMs: number;
  private readonly code: string;
  private readonly onWorkerLost: SymbolPoolOptions["onWorkerLost"];
  private readonly onGrammarsFailed: SymbolPoolOptions["onGrammarsFailed"];
  private nextId = 1;
  private closed = false;
  private spawned = 0;

  constructor(options: SymbolPoolOptions = {}) {
    const n = Math.max(1, options.workers ?? Math.min(2, availableParallelism()));
    this.slots = Array.from({ length: n }, () => ({ worker: undefined, queue: [], timer: undefined, ready: false }));
    this.answerTimeoutMs = options.answerTimeoutMs ?? Math.max(5_000, DEFAULT_PARSE_TIMEOUT_MS * 10);
    this.code = bootstrap(options.workerUrl ?? WORKER_URL);
    this.onWorkerLost = options.onWorkerLost;
    this.onGrammarsFailed = options.onGrammarsFailed;
  }

  /** Starts every worker now (their grammars load off the request path). */
  start(): void {
    if (this.closed) return;
    for (const slot of this.slots) if (!slot.worker) this.spawn(slot);
  }

  diff(path: string, old: Uint8Array | undefined, next: Uint8Array | undefined): Promise<SymbolChange[]> {
    // No grammar: nothing to parse, no reason to cross threads.
    if (!languageForPath(path)) return Promise.resolve(wholeFileChange(path, old, next));
    if (this.closed) return Promise.reject(stopping(path));
    const slot = this.slots[slotOf(path, this.slots.length)]!;
    return new Promise<SymbolChange[]>((resolve, reject) => {
      const p: Pending = { req: { id: this.nextId++, path, old, next }, resolve, reject, deaths: 0 };
      this.send(slot, p);
    });
  }

  /** Workers started since the pool was made (respawns included). */
  stats(): { workers: number; spawned: number; queued: number } {
    return { workers: this.slots.length, spawned: this.spawned, queued: this.slots.reduce((n, s) => n + s.queue.length, 0) };
  }

  async close(): Promise<void> {
    this.closed = true;
    const exits: Promise<number>[] = [];
    for (const slot of this.slots) {
      const worker = slot.worker;
      slot.worker = undefined;
      clearTimeout(slot.timer);
      for (const p of slot.queue.splice(0)) p.reject(stopping(p.req.path));
      if (worker) exits.push(worker.terminate());
    }
    await Promise.all(exits);
  }

  private send(slot: Slot, p: Pending): void {
    const worker = slot.worker ?? this.spawn(slot);
    slot.queue.push(p);
    worker.postMessage(p.req);
    if (slot.queue.length === 1) this.arm(slot);
  }

  private spawn(slot: Slot): Worker {
    this.spawned++;
    const worker = new Worker(this.code, { eval: true, name: "berth-symbols", execArgv: [] });
    worker.unref();
    slot.worker = worker;
    slot.ready = false;
    worker.on("message", (a: SymbolAnswer) => {
      if (slot.worker !== worker) return;
      if ("ready" in a) {
        slot.ready = true;
        if (a.failed.length > 0) this.onGrammarsFailed?.(a.failed);
        if (slot.queue.length > 0) this.arm(slot);
        return;
      }
      const head = slot.queue[0];
      if (head?.req.id !== a.id) return;
      slot.queue.shift();
      clearTimeout(slot.timer);
      if (slot.queue.length > 0) this.arm(slot);
      head.resolve(a.changes);
    });
    // An uncaught error is followed by the exit event: the exit reports both, with the error's message.
    let failure: string | undefined;
    worker.on("error", (err: Error) => {
      failure = err.message;
    });
    worker.on("exit", (code: number) => {
      if (slot.worker !== worker) return;
      // The oldest request is the one the worker was running: the only one that can have killed it.
      const running = slot.queue[0];
      if (running) running.deaths++;
      this.lost(slot, `the symbol worker exited (code ${code}${failure === undefined ? "" : `: ${failure}`})`, (p) => p.deaths < 2);
    });
    return worker;
  }

  /** The oldest request of the slot is the one its worker runs now: it has answerTimeoutMs. */
  private arm(slot: Slot): void {
    clearTimeout(slot.timer);
    if (!slot.ready) return;
    slot.timer = setTimeout(() => {
      const worker = slot.worker;
      const head = slot.queue[0];
      this.lost(slot, `no answer within ${this.answerTimeoutMs} ms`, (p) => p !== head);
      void worker?.terminate();
    }, this.answerTimeoutMs);
    slot.timer.unref();
  }

  /** The slot's worker is gone: requests `retry` admits go to a new worker, the others are the whole-file unit. */
  private lost(slot: Slot, reason: string, retry: (p: Pending) => boolean): void {
    clearTimeout(slot.timer);
    slot.worker = undefined;
    const held = slot.queue.splice(0);
    this.onWorkerLost?.({ reason, path: held[0]?.req.path });
    for (const p of held) {
      if (this.closed) p.reject(stopping(p.req.path));
      else if (retry(p)) this.send(slot, p);
      else p.resolve(wholeFileChange(p.req.path, p.req.old, p.req.next));
    }
  }
}
