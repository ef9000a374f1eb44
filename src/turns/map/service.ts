/**
 * WorkspaceMapService: the workspace map, off the turn's critical path.
 *
 * The four rules (see ../../../../shared/reference/workspace-map-off-critical-path.txt, and
 * the tests in test/turns/map.test.ts, each of which hangs or fails without its rule):
 *
 * 1. No filesystem call on the request path. getMap does map lookups, a lexical skip check
 *    and timer arithmetic; the root's stat, realpath, every readdir, the mount check and the
 *    .gitignore reads happen in the walker (a dedicated worker thread). Consequences that are
 *    deliberate: the cache is keyed on the root as given (not canonicalised), and the fast
 *    path is TTL-only (no mtime check — that would be a stat on the request path).
 * 2. A finite budget (BERTH_MAP_BUDGET_MS, > 0, never "forever"). On lapse the turn proceeds
 *    without a map (or with the last good one), one WARN names the directory and the levers,
 *    and the negative result is cached for BERTH_MAP_TTL_MS. A TTL of 0 caches nothing: not
 *    the walk's result, not the over-budget stamp, not a last good map.
 * 3. The wait is tied to the caller's AbortSignal: abort answers `cancelled` at once. The walk
 *    itself cannot be cancelled (a blocked syscall has no cancellation point); it runs on.
 * 4. Single-flight per root: while a walk of a root is in flight no second one starts; later
 *    turns get the last good map at once, or (with none) wait within their own budget for the
 *    same walk. A walk that never settles never releases its marker — deliberately — so a
 *    wedged filesystem costs one worker per root, not one per turn.
 *
 * Skip rules: the home directory, filesystem roots and roots inside opaque trees get no map
 * and no walk; one INFO line per skipped root for the life of the service, not per turn.
 */
import { homedir } from "node:os";
import { MAP_VARIABLES, readMapConfig, validateMapConfig, type MapConfig } from "./config.js";
import { listingEntries } from "./listing.mjs";
import { renderMap } from "./render.js";
import type { Clock, MapLogger, MapResult, SkipReason, WalkResult, Walker, WorkspaceMap } from "./types.js";
import { skipReason } from "./walk-core.mjs";
import { createWorkerWalker, type WorkerWalker } from "./worker-walker.js";

export interface WorkspaceMapServiceOptions {
  /** The walk. Default: a worker-thread walker owned (and closed) by the service. */
  readonly walker?: Walker;
  readonly logger?: MapLogger;
  readonly clock?: Clock;
  /** The home directory for the skip rules. Default: os.homedir(), read once at construction. */
  readonly home?: string;
  /** Environment to read BERTH_MAP_* from. Default: process.env. */
  readonly env?: NodeJS.ProcessEnv;
  /** Overrides of the environment's values (validated the same way). */
  readonly config?: Partial<MapConfig>;
  /** Roots remembered (cache + last good map); the oldest without a walk in flight are forgotten first. Default 1024. */
  readonly maxRoots?: number;
}

export interface GetMapOptions {
  readonly signal?: AbortSignal;
}

type Cached =
  | { readonly kind: "map"; readonly map: WorkspaceMap; readonly expiresAt: number }
  | { readonly kind: "over_budget"; readonly expiresAt: number }
  | { readonly kind: "skipped"; readonly reason: SkipReason; readonly expiresAt: number }
  | { readonly kind: "failed"; readonly code: string; readonly message: string; readonly expiresAt: number };

/** What a finished walk resolves to, computed once by the walk's own continuation. */
type Settled = Extract<MapResult, { status: "ok" | "skipped" | "failed" }>;

interface RootState {
  /** The single-flight marker. Cleared only when the walk settles. */
  inFlight: Promise<Settled> | undefined;
  cached: Cached | undefined;
  lastGood: WorkspaceMap | undefined;
}

const SKIP_MESSAGES: Record<SkipReason, string> = {
  home_directory: "workspace map: no file map for this chat because the working directory is the home directory, which is not a workspace",
  filesystem_root: "workspace map: no file map for this chat because the working directory is a filesystem root, which is not a workspace",
  opaque_tree: "workspace map: no file map for this chat because the working directory is inside an OS or cloud-sync tree (Library, Group Containers, CloudStorage, Mobile Documents, FileProvider, .Trash) that is never walked",
};

const NOOP_LOGGER: MapLogger = { warn() {}, info() {} };
const SYSTEM_CLOCK: Clock = { now: () => Date.now() };

export class WorkspaceMapService {
  readonly config: MapConfig;
  private readonly walker: Walker;
  private readonly ownedWalker: WorkerWalker | undefined;
  private readonly logger: MapLogger;
  private readonly clock: Clock;
  private readonly home: string | undefined;
  private readonly maxRoots: number;
  private readonly roots = new Map<string, RootState>();
  private readonly loggedSkips = new Set<string>();

  /** @throws ConfigError when a BERTH_MAP_* value is invalid (a budget <= 0 included). */
  constructor(options: WorkspaceMapServiceOptions = {}) {
    const fromEnv = readMapConfig(options.env ?? process.env);
    this.config = validateMapConfig({ ...fromEnv, ...stripUndefined(options.config ?? {}) });
    this.logger = options.logger ?? NOOP_LOGGER;
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.home = options.home ?? safeHomedir();
    this.maxRoots = options.maxRoots ?? 1024;
    if (options.walker) {
      this.walker = options.walker;
      this.ownedWalker = undefined;
    } else {
      this.ownedWalker = createWorkerWalker({ prewarm: true });
      this.walker = this.ownedWalker;
    }
  }

  /**
   * The map of `root` for a turn. Never throws, never waits longer than the budget, answers
   * at once when `signal` aborts. Does no filesystem call.
   */
  async getMap(root: string, options: GetMapOptions = {}): Promise<MapResult> {
    const { signal } = options;
    if (signal?.aborted) return { status: "cancelled" };

    const reason = skipReason(root, this.home);
    if (reason) {
      this.logSkipOnce(root, reason);
      return { status: "skipped", reason };
    }

    const state = this.state(root);
    const cached = state.cached;
    if (cached && this.clock.now() < cached.expiresAt) {
      switch (cached.kind) {
        case "map":
          return { status: "ok", map: cached.map };
        case "over_budget":
          return state.lastGood ? { status: "stale", map: state.lastGood, why: "over_budget" } : { status: "over_budget" };
        case "skipped":
          return { status: "skipped", reason: cached.reason };
        case "failed":
          return { status: "failed", code: cached.code, message: cached.message };
      }
    }

    if (state.inFlight) {
      // Rule 4: never a second walk of this root. Serve the last good map, or wait (within
      // this turn's own budget) for the walk already running.
      if (state.lastGood) return { status: "stale", map: state.lastGood, why: "walk_in_flight" };
      return this.wait(root, state, state.inFlight, signal);
    }

    return this.wait(root, state, this.startWalk(root, state), signal);
  }

  /** Whether a walk of `root` is in flight (for tests and stats). */
  isWalking(root: string): boolean {
    return this.roots.get(root)?.inFlight !== undefined;
  }

  /** Terminates the idle workers of the default walker. Wedged walks cannot be reclaimed. */
  async close(): Promise<void> {
    await this.ownedWalker?.close();
  }

  private startWalk(root: string, state: RootState): Promise<Settled> {
    const { maxDepth, maxEntries, ttlMs } = this.config;
    let walk: Promise<WalkResult>;
    try {
      walk = this.walker(root, { maxDepth, maxEntries, home: this.home });
    } catch (err) {
      walk = Promise.resolve({ kind: "error", code: "EWALK", message: errorMessage(err) });
    }
    const settled: Promise<Settled> = walk.then(
      (result) => this.settle(root, state, settled, result, ttlMs),
      (err: unknown) => this.settle(root, state, settled, { kind: "error", code: "EWALK", message: errorMessage(err) }, ttlMs),
    );
    state.inFlight = settled;
    return settled;
  }

  /** The walk's own continuation: runs whether or not anyone is still waiting. */
  private settle(root: string, state: RootState, marker: Promise<Settled>, result: WalkResult, ttlMs: number): Settled {
    if (state.inFlight === marker) state.inFlight = undefined;
    const now = this.clock.now();
    let out: Settled;
    if (result.kind === "ok") {
      const entries = listingEntries(result.listing);
      const total = Math.max(result.total, entries.length);
      const map: WorkspaceMap = Object.freeze({
        root,
        entries,
        shown: entries.length,
        total,
        truncated: total > entries.length,
        maxDepth: this.config.maxDepth,
        text: renderMap(entries, { total, maxDepth: this.config.maxDepth }),
        builtAt: now,
      });
      out = { status: "ok", map };
      if (ttlMs > 0) {
        state.cached = { kind: "map", map, expiresAt: now + ttlMs };
        state.lastGood = map;
      }
    } else if (result.kind === "skipped") {
      // Found by the worker after canonicalising (e.g. a symlink to the home directory).
      this.logSkipOnce(root, result.reason);
      out = { status: "skipped", reason: result.reason };
      if (ttlMs > 0) state.cached = { kind: "skipped", reason: result.reason, expiresAt: now + ttlMs };
    } else {
      this.logger.warn({ root, code: result.code, err: result.message }, "workspace map: the walk failed; turns proceed without a map");
      out = { status: "failed", code: result.code, message: result.message };
      if (ttlMs > 0) state.cached = { kind: "failed", code: result.code, message: result.message, expiresAt: now + ttlMs };
    }
    if (ttlMs === 0) {
      state.cached = undefined;
      state.lastGood = undefined;
    }
    this.trim();
    return out;
  }

  /** Rules 2 and 3: wait for the walk, the budget or the caller's signal, whichever first. */
  private wait(root: string, state: RootState, walk: Promise<Settled>, signal: AbortSignal | undefined): Promise<MapResult> {
    const { budgetMs, ttlMs } = this.config;
    return new Promise<MapResult>((resolve) => {
      let done = false;
      const finish = (result: MapResult): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(result);
      };
      const onAbort = (): void => finish({ status: "cancelled" });
      const timer = setTimeout(() => {
        if (done) return;
        this.logger.warn(
          { root, budgetMs, ttlMs, levers: [MAP_VARIABLES.budgetMs, MAP_VARIABLES.maxDepth] },
          `workspace map: the walk of ${root} did not finish within ${budgetMs} ms; the turn proceeds without a map ` +
            `(raise ${MAP_VARIABLES.budgetMs} if the tree is slow, or lower ${MAP_VARIABLES.maxDepth} if it is large; ` +
            `the walk is not retried for ${MAP_VARIABLES.ttlMs}=${ttlMs} ms)`,
        );
        // Stamp the negative only while this walk is still the one in flight (it cannot have
        // settled: its continuation would have run first), and only if the TTL caches at all.
        if (ttlMs > 0 && state.inFlight === walk) state.cached = { kind: "over_budget", expiresAt: this.clock.now() + ttlMs };
        finish(state.lastGood ? { status: "stale", map: state.lastGood, why: "over_budget" } : { status: "over_budget" });
      }, budgetMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      walk.then(finish, () => finish({ status: "failed", code: "EWALK", message: "the walk failed" }));
    });
  }

  private state(root: string): RootState {
    let s = this.roots.get(root);
    if (s) {
      // Most recently used last.
      this.roots.delete(root);
      this.roots.set(root, s);
      return s;
    }
    s = { inFlight: undefined, cached: undefined, lastGood: undefined };
    this.roots.set(root, s);
    this.trim(root);
    return s;
  }

  /** Forgets the least recently used roots past maxRoots — never one with a walk in flight. */
  private trim(keep?: string): void {
    if (this.roots.size <= this.maxRoots) return;
    for (const [root, s] of this.roots) {
      if (this.roots.size <= this.maxRoots) break;
      if (s.inFlight === undefined && root !== keep) this.roots.delete(root);
    }
  }

  private logSkipOnce(root: string, reason: SkipReason): void {
    if (this.loggedSkips.has(root)) return;
    if (this.loggedSkips.size >= 10_000) this.loggedSkips.clear();
    this.loggedSkips.add(root);
    this.logger.info({ working_dir: root, reason }, SKIP_MESSAGES[reason]);
  }
}

function safeHomedir(): string | undefined {
  try {
    return homedir();
  } catch {
    return undefined;
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
