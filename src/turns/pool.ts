/**
 * The pool: per-workspace state, its lane, and the seats (docs/turns.md, "The pool").
 *
 * Seating is synchronous so that BeginTurn can hold its seat before any await (reserve before
 * acquire): a steer then always finds the running turn instead of cold-acquiring beside it.
 * Only IDLE environments are ever evicted for room; a turn that finds no seat runs unreserved
 * rather than waiting. The pool decides who is evicted; the eviction itself (capture, teardown)
 * is directory work, queued on the victim's lane by the `evict` callback.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { Workspace } from "../sessions/workspace.js";
import type { Environment } from "./environment.js";
import type { Turn } from "./turn.js";

export type SlotState = "busy" | "idle" | "approval";
export type EvictReason =
  | "supersede-busy"
  | "pre-acquire"
  | "mount-lost"
  | "idle-expiry"
  | "approval-expiry"
  | "capacity"
  | "session-ended"
  | "rebased"
  | "turn-failed"
  | "turn-cancelled"
  | "lost-race"
  | "server-shutdown"
  | "server-restart";

export interface PoolSettings {
  readonly root: string;
  readonly idleTtlMs: number;
  readonly approvalTtlMs: number;
  readonly poolMax: number;
  /** Liveness probe timeout (default 1000 ms): a probe that takes longer counts as thrown (reuse). */
  readonly probeTimeoutMs?: number;
  /** Expiry sweep period (default 1000 ms; 0 disables the timer — tests call sweep()). */
  readonly sweepIntervalMs?: number;
  /** Pre-extracted base trees kept per (repository, commit) for cold acquires (default 2; 0 disables). */
  readonly spares?: number;
  /** Capture leaves out files over this size, unread (default 8 MiB: the overlay's BERTH_MAX_FILE_BYTES). */
  readonly maxFileBytes?: number;
  /** How long stop() waits for the capture of the running turns (default 10 s: BERTH_SHUTDOWN_GRACE_MS). */
  readonly shutdownGraceMs?: number;
}

export interface PoolStats {
  busy: number;
  idle: number;
  awaitingApproval: number;
  capacity: number;
  evictions: Record<string, bigint>;
  warmAcquires: bigint;
  coldAcquires: bigint;
  unreservedTurns: bigint;
}

/** Two instances' pools as one: every count and counter summed, evictions by reason. */
export function addPoolStats(a: PoolStats, b: PoolStats): PoolStats {
  const evictions: Record<string, bigint> = { ...a.evictions };
  for (const [reason, n] of Object.entries(b.evictions)) evictions[reason] = (evictions[reason] ?? 0n) + n;
  return {
    busy: a.busy + b.busy,
    idle: a.idle + b.idle,
    awaitingApproval: a.awaitingApproval + b.awaitingApproval,
    capacity: a.capacity + b.capacity,
    evictions,
    warmAcquires: a.warmAcquires + b.warmAcquires,
    coldAcquires: a.coldAcquires + b.coldAcquires,
    unreservedTurns: a.unreservedTurns + b.unreservedTurns,
  };
}

export interface WsState {
  readonly workspaceId: string;
  ws: Workspace;
  lane: Promise<unknown>;
  /** Jobs queued or running on the lane: the state is forgotten only when none is. */
  pending: number;
  turn: Turn | undefined;
  env: Environment | undefined;
  /** Seated in the pool: slot is its state. Not seated: unreserved (or nothing). */
  seated: boolean;
  slot: SlotState | undefined;
  parkedAt: number;
  lastUsed: number;
  /** Row updates of this workspace's turns made outside the lane (cancel, session end): a new turn's insert waits for them. */
  finishing: Promise<unknown>;
}

export interface PoolDeps {
  readonly settings: PoolSettings;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Queues the eviction of a parked environment the pool has just unseated (capacity). */
  readonly evict: (state: WsState, reason: EvictReason) => void;
}

export class Pool {
  /**
   * By workspace id. A state with no turn, no environment, no seat and nothing on its lane holds
   * nothing worth keeping: it is forgotten when its last lane job settles (made again on the next
   * turn), so the map is bounded by the workspaces that have a turn or an environment.
   */
  private readonly states = new Map<string, WsState>();
  private seatedCount = 0;
  private readonly evictions = new Map<string, bigint>();
  warmAcquires = 0n;
  coldAcquires = 0n;
  unreservedTurns = 0n;

  constructor(private readonly deps: PoolDeps) {}

  stateOf(ws: Workspace): WsState {
    let s = this.states.get(ws.workspaceId);
    if (!s) {
      s = { workspaceId: ws.workspaceId, ws, lane: Promise.resolve(), pending: 0, turn: undefined, env: undefined, seated: false, slot: undefined, parkedAt: 0, lastUsed: 0, finishing: Promise.resolve() };
      this.states.set(ws.workspaceId, s);
    }
    s.ws = ws;
    return s;
  }

  get(workspaceId: string): WsState | undefined {
    return this.states.get(workspaceId);
  }

  /** Whether this process holds the workspace's environment: a turn running (or starting), or an environment parked. */
  holds(workspaceId: string): boolean {
    const s = this.states.get(workspaceId);
    return s !== undefined && (s.turn !== undefined || s.env !== undefined);
  }

  all(): IterableIterator<WsState> {
    return this.states.values();
  }

  /** Number of per-workspace states held (tests: bounded memory). */
  get size(): number {
    return this.states.size;
  }

  /**
   * Runs `job` on the workspace's lane, after everything queued before it (whether it failed or
   * not). When the last queued job settles and the state holds nothing, the state is forgotten.
   */
  enqueue<T>(state: WsState, job: () => Promise<T>): Promise<T> {
    state.pending++;
    const run = state.lane.then(job, job);
    const settled = () => {
      state.pending--;
      this.forgetIfUnused(state);
    };
    state.lane = run.then(settled, settled); // the lane only orders jobs: run (and its failure) goes to the caller
    return run;
  }

  /** Keeps the state while `work` (outside the lane) is in flight, as a lane job would. */
  holdUntil(state: WsState, work: Promise<unknown>): void {
    state.pending++;
    const settled = () => {
      state.pending--;
      this.forgetIfUnused(state);
    };
    void work.then(settled, settled); // only counts; the caller handles the work's failure
  }

  /** Forgets a state with no turn, no environment, no seat and no lane job (nothing to order, nothing to evict). */
  private forgetIfUnused(state: WsState): void {
    if (state.pending > 0 || state.turn || state.env || state.seated) return;
    if (this.states.get(state.workspaceId) === state) this.states.delete(state.workspaceId);
  }

  /** Seats the state in the pool as BUSY; when full of non-idle seats, the turn runs unreserved. */
  reserve(state: WsState): void {
    state.lastUsed = this.deps.clock.now();
    if (this.trySeat(state)) {
      state.slot = "busy";
      this.deps.logger.debug({ workspaceId: state.workspaceId }, "turn pool: reserve");
      return;
    }
    this.unreservedTurns++;
    this.deps.logger.info({ workspaceId: state.workspaceId, capacity: this.deps.settings.poolMax }, "turn pool: full of busy or approval-parked environments; the turn runs unreserved");
  }

  /** Takes a seat (evicting the LRU idle environment when full); false when none can be had. */
  trySeat(state: WsState): boolean {
    if (state.seated) return true;
    if (this.seatedCount >= this.deps.settings.poolMax && !this.evictLruIdle(state)) return false;
    state.seated = true;
    state.slot = "busy";
    this.seatedCount++;
    return true;
  }

  /** Evicts the least recently used IDLE environment (never a busy or approval-parked one). */
  private evictLruIdle(except: WsState): boolean {
    let victim: WsState | undefined;
    for (const s of this.states.values()) {
      if (s === except || !s.seated || s.slot !== "idle") continue;
      if (!victim || s.lastUsed < victim.lastUsed) victim = s;
    }
    if (!victim) return false;
    this.unseat(victim);
    this.deps.evict(victim, "capacity");
    return true;
  }

  /** Parks a finished turn's environment in `slot` (IDLE or AWAITING_APPROVAL); false when no seat can be had. */
  park(state: WsState, slot: "idle" | "approval", now: number): boolean {
    if (!this.trySeat(state)) return false;
    state.slot = slot;
    state.parkedAt = now;
    state.lastUsed = now;
    return true;
  }

  unseat(state: WsState): void {
    if (state.seated) this.seatedCount--;
    state.seated = false;
    state.slot = undefined;
  }

  /** Whether an environment parked in `slot` since `parkedAt` is past its keep-alive at `now`. */
  expiryOf(slot: SlotState | undefined, parkedAt: number, now: number): EvictReason | undefined {
    return slot === "idle" && now - parkedAt >= this.deps.settings.idleTtlMs ? "idle-expiry"
      : slot === "approval" && now - parkedAt >= this.deps.settings.approvalTtlMs ? "approval-expiry"
      : undefined;
  }

  /** Unseats every parked environment past its keep-alive; the caller queues their evictions. */
  unseatExpired(now: number): { state: WsState; reason: EvictReason }[] {
    const expired: { state: WsState; reason: EvictReason }[] = [];
    for (const s of this.states.values()) {
      if (!s.seated || !s.env) continue;
      const reason = this.expiryOf(s.slot, s.parkedAt, now);
      if (!reason) continue;
      this.unseat(s);
      expired.push({ state: s, reason });
    }
    return expired;
  }

  countEviction(reason: EvictReason): void {
    this.evictions.set(reason, (this.evictions.get(reason) ?? 0n) + 1n);
  }

  stats(): PoolStats {
    let busy = 0;
    let idle = 0;
    let awaitingApproval = 0;
    for (const s of this.states.values()) {
      if (!s.seated) continue;
      if (s.slot === "busy") busy++;
      else if (s.slot === "idle") idle++;
      else if (s.slot === "approval") awaitingApproval++;
    }
    return {
      busy,
      idle,
      awaitingApproval,
      capacity: this.deps.settings.poolMax,
      evictions: Object.fromEntries(this.evictions),
      warmAcquires: this.warmAcquires,
      coldAcquires: this.coldAcquires,
      unreservedTurns: this.unreservedTurns,
    };
  }
}
