/**
 * The turn scheduler: turns, the environment pool, steering and cancellation (docs/turns.md).
 *
 * Per workspace there is one WsState: the running turn, the environment, the pool seat and a
 * lane (a FIFO of directory work). Everything that decides — supersede, reject, cancel, the
 * reservation — happens synchronously when a request arrives; everything that touches the
 * directory runs in the lane, in arrival order. Hence:
 *  - a running turn holds its seat from the moment BeginTurn is accepted (reserve before acquire);
 *  - a second BeginTurn always finds the running turn and takes the supersede branch, whose
 *    job (capture, then teardown of the displaced environment) runs before its own acquire;
 *  - teardown is idempotent (one promise per Environment) and identity-checked (the marker's
 *    token), so tearing down a displaced environment never removes its replacement.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { outcomeEnum } from "../platform/proto-enums.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition, notFound } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import type { EventHub } from "../delivery/hub.js";
import { insertEvents, type EventInput } from "../platform/outbox.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import {
  BaseSpares,
  diff,
  envPath,
  exists,
  loadLeftover,
  materialise,
  moveAside,
  probe,
  removeIfOwned,
  reportDeletionFailures,
  saveManifest,
  type Environment,
  type TeardownResult,
} from "./environment.js";
import type { MapResult } from "./map/index.js";
import type { WorkspaceMapService } from "./map/index.js";
import * as store from "./store.js";

export type SlotState = "busy" | "idle" | "approval";
export type EvictReason =
  | "supersede-busy"
  | "pre-acquire"
  | "mount-lost"
  | "idle-expiry"
  | "approval-expiry"
  | "capacity"
  | "session-ended"
  | "turn-failed"
  | "turn-cancelled";

export type OnBusyName = "supersede" | "reject";

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
}

export interface TurnSchedulerDeps {
  readonly registry: WorkspaceRegistry;
  readonly overlay: OverlayPort;
  readonly maps: WorkspaceMapService;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: PoolSettings;
  readonly events?: EventHub | undefined;
  /** Replaces the liveness probe (tests). */
  readonly probe?: (env: Environment) => Promise<boolean>;
}

export interface Turn {
  readonly id: string;
  readonly sessionId: string;
  readonly workspaceId: string;
  readonly repoId: string;
  readonly clientTurnId: string | null;
  state: store.TurnStateName;
  outcome: store.OutcomeName | null;
  warm: boolean;
  readonly environmentPath: string;
  readonly startedAt: number;
  endedAt: number | null;
  supersededBy: string | null;
  endReason: string;
  readonly abort: AbortController;
  env: Environment | undefined;
  /** The BeginTurn that started it (idempotent retries await it). */
  started: Promise<BeginResult>;
  /** Set when the row insert began; finishers await it before updating the row. */
  rowWritten: Promise<void> | undefined;
  /** The teardown after a cancel/supersede/session end (settled = it finished). */
  settled: Promise<unknown> | undefined;
  settledDone: boolean;
}

export interface BeginResult {
  readonly turn: Turn;
  readonly supersededTurnId: string;
  readonly map: MapResult;
}

interface WsState {
  readonly workspaceId: string;
  ws: Workspace;
  lane: Promise<unknown>;
  turn: Turn | undefined;
  env: Environment | undefined;
  /** Seated in the pool: slot is its state. Not seated: unreserved (or nothing). */
  seated: boolean;
  slot: SlotState | undefined;
  parkedAt: number;
  lastUsed: number;
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

const FINISHED_TURNS_KEPT = 10_000;
const SESSION_ENDING = ["session.stranded", "session.abandoned", "session.destroyed", "session.expired"];

export class TurnScheduler {
  private readonly states = new Map<string, WsState>();
  private readonly turns = new Map<string, Turn>();
  private readonly byClientId = new Map<string, Turn>();
  private readonly clientLookups = new Map<string, Promise<BeginResult>>();
  private readonly finished: string[] = [];
  private seatedCount = 0;
  private readonly evictions = new Map<string, bigint>();
  private warmAcquires = 0n;
  private coldAcquires = 0n;
  private unreservedTurns = 0n;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly stopWatching = new AbortController();
  private readonly background = new Set<Promise<unknown>>();
  private readonly probeFn: (env: Environment) => Promise<boolean>;
  private readonly spares: BaseSpares;

  constructor(private readonly deps: TurnSchedulerDeps) {
    const timeout = deps.settings.probeTimeoutMs ?? 1000;
    this.probeFn = deps.probe ?? ((env) => probe(env, timeout));
    this.spares = new BaseSpares(deps.settings.root, deps.settings.spares ?? 2, () => deps.clock.now());
    reportDeletionFailures((dir, err) => deps.logger.error({ err, dir }, "could not delete a torn-down environment; it is left on disk"));
  }

  get root(): string {
    return this.deps.settings.root;
  }

  /** Marks turns orphaned by a previous incarnation, starts the expiry sweep and the session-end watch. */
  async start(): Promise<void> {
    const n = await store.failOrphanedTurns(this.deps.registry.db, this.deps.registry.instanceId, new Date(this.deps.clock.now()));
    if (n > 0) this.deps.logger.info({ turns: n }, "turns: running turns of a previous incarnation marked ENDED/FAILED (server_restart)");
    const every = this.deps.settings.sweepIntervalMs ?? 1000;
    if (every > 0) {
      this.sweepTimer = setInterval(() => this.sweep(), every);
      this.sweepTimer.unref();
    }
    if (this.deps.events) this.track(this.watchSessionEnds(this.deps.events));
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.stopWatching.abort();
    for (const t of this.turns.values()) if (t.state === "running") t.abort.abort();
    await Promise.allSettled([...this.states.values()].map((s) => s.lane));
    await Promise.allSettled([...this.background]);
    await this.spares.close();
  }

  // ---- BeginTurn ----------------------------------------------------------------------

  beginTurn(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal): Promise<BeginResult> {
    if (!clientTurnId) return this.begin(ws, undefined, onBusy, signal);
    // Retries of one client_turn_id are the same turn: in memory, in flight, or in the database.
    const key = clientKey(ws.sessionId, clientTurnId);
    const known = this.byClientId.get(key);
    if (known) return known.started;
    const inFlight = this.clientLookups.get(key);
    if (inFlight) return inFlight;
    const p = (async () => {
      const row = await store.findByClientId(this.deps.registry.db, ws.sessionId, clientTurnId);
      const again = this.byClientId.get(key);
      if (again) return again.started;
      if (row) {
        const turn = this.turns.get(row.id) ?? turnFromRow(row);
        return { turn, supersededTurnId: "", map: await this.deps.maps.getMap(turn.environmentPath, { signal }) };
      }
      return this.begin(ws, clientTurnId, onBusy, signal);
    })();
    this.clientLookups.set(key, p);
    void p.finally(() => this.clientLookups.delete(key)).catch(() => {});
    return p;
  }

  private async begin(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal): Promise<BeginResult> {
    const state = this.stateOf(ws);
    const old = state.turn;
    if (old && onBusy === "reject") {
      await this.record([this.turnEvent(ws, "turn.rejected", old, { reason: "TURN_IN_PROGRESS" })]);
      throw failedPrecondition("TURN_IN_PROGRESS", `session ${ws.sessionId} has a running turn ${old.id}`, { session_id: ws.sessionId, turn_id: old.id });
    }

    const now = this.deps.clock.now();
    const turn: Turn = {
      id: randomUUID(),
      sessionId: ws.sessionId,
      workspaceId: ws.workspaceId,
      repoId: ws.repoId,
      clientTurnId: clientTurnId ?? null,
      state: "running",
      outcome: null,
      warm: false,
      environmentPath: envPath(this.root, ws.workspaceId),
      startedAt: now,
      endedAt: null,
      supersededBy: null,
      endReason: "",
      abort: new AbortController(),
      env: undefined,
      started: undefined as unknown as Promise<BeginResult>,
      rowWritten: undefined,
      settled: undefined,
      settledDone: false,
    };
    // Synchronous from here to the lane: the steer is decided and the slot held before any await.
    if (old) {
      old.state = "superseded";
      old.supersededBy = turn.id;
      old.endedAt = now;
      old.abort.abort();
    }
    state.turn = turn;
    this.turns.set(turn.id, turn);
    if (clientTurnId) this.byClientId.set(clientKey(ws.sessionId, clientTurnId), turn);
    const parked = { slot: state.slot, parkedAt: state.parkedAt };
    this.reserve(state);

    // The map's wait starts as soon as the directory is in place, alongside the row insert.
    const mapSignal = AbortSignal.any([signal, turn.abort.signal]);
    let mapWait: Promise<MapResult> | undefined;
    const job = this.enqueue(state, () => this.acquire(state, turn, old, parked, () => {
      mapWait = this.deps.maps.getMap(turn.environmentPath, { signal: mapSignal });
    }));
    turn.started = job.then(async () => {
      if (turn.state !== "running") {
        throw new BerthError("aborted", turn.state === "superseded" ? "TURN_SUPERSEDED" : "TURN_CANCELLED", `turn ${turn.id} was ${turn.state} before it started`, { turn_id: turn.id });
      }
      const map = await (mapWait ?? this.deps.maps.getMap(turn.environmentPath, { signal: mapSignal }));
      return { turn, supersededTurnId: old?.id ?? "", map };
    });
    turn.started.catch(() => {
      if (clientTurnId && this.byClientId.get(clientKey(ws.sessionId, clientTurnId)) === turn && !turn.rowWritten) {
        this.byClientId.delete(clientKey(ws.sessionId, clientTurnId));
      }
    });
    return turn.started;
  }

  /** Seats the state in the pool as BUSY; when full of non-idle seats, the turn runs unreserved. */
  private reserve(state: WsState): void {
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
  private trySeat(state: WsState): boolean {
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
    const v = victim;
    this.track(this.enqueue(v, () => this.evictParked(v, "capacity")));
    return true;
  }

  private unseat(state: WsState): void {
    if (state.seated) this.seatedCount--;
    state.seated = false;
    state.slot = undefined;
  }

  /** The lane job of a BeginTurn: settle the displaced environment, then a warm or cold acquire. */
  private async acquire(state: WsState, turn: Turn, old: Turn | undefined, parked: { slot: SlotState | undefined; parkedAt: number }, placed?: () => void): Promise<void> {
    const ws = state.ws;
    try {
      if (old) {
        if (state.env && old.env === state.env) {
          old.settled = this.teardown(state, state.env, "supersede-busy", old.sessionId);
          await old.settled;
          old.settledDone = true;
        } else {
          old.settledDone = true;
        }
        await this.finishInDb(old, "superseded", { supersededBy: turn.id }, [this.turnEvent(ws, "turn.superseded", old, { other: turn.id })]);
      }
      let env = state.env;
      let warm = false;
      if (env) {
        const now = this.deps.clock.now();
        if (parked.slot === "approval" && now - parked.parkedAt >= this.deps.settings.approvalTtlMs) {
          await this.teardown(state, env, "approval-expiry", turn.sessionId);
          env = undefined;
        } else if (parked.slot === "idle" && now - parked.parkedAt >= this.deps.settings.idleTtlMs) {
          await this.teardown(state, env, "idle-expiry", turn.sessionId);
          env = undefined;
        } else {
          let alive = true;
          try {
            alive = await this.probeFn(env);
          } catch (err) {
            this.deps.logger.warn({ err, path: env.path, workspaceId: state.workspaceId }, "turn pool: mount-probe threw, reusing");
          }
          if (alive) warm = true;
          else {
            this.deps.logger.info({ path: env.path, workspaceId: state.workspaceId }, "turn pool: mismatch (mount-lost): the parked environment is gone; rebuilding cold");
            await this.teardown(state, env, "mount-lost", turn.sessionId);
            env = undefined;
          }
        }
      }
      if (!env || state.env !== env) {
        env = await this.coldAcquire(state, turn);
      }
      state.env = env;
      turn.env = env;
      turn.warm = warm;
      if (warm) this.warmAcquires++;
      else this.coldAcquires++;
      this.deps.logger.debug({ workspaceId: state.workspaceId, turnId: turn.id, warm }, warm ? "turn pool: warm" : "turn pool: cold acquire");
      placed?.();
      await this.insertRow(turn, ws, old);
    } catch (err) {
      if (state.turn === turn) {
        state.turn = undefined;
        turn.state = "cancelled";
        turn.endReason = "acquire_failed";
        if (!state.env && state.seated && state.slot === "busy") this.unseat(state);
      }
      this.deps.logger.error({ err, workspaceId: state.workspaceId, turnId: turn.id }, "turn: acquire failed");
      throw err;
    }
  }

  private async coldAcquire(state: WsState, turn: Turn): Promise<Environment> {
    const ws = state.ws;
    const dir = envPath(this.root, ws.workspaceId);
    if (await exists(dir)) {
      // A directory no pool entry owns: a previous process's (or a crashed turn's).
      const leftover = await loadLeftover(this.root, ws.workspaceId);
      if (leftover) {
        await this.teardown(state, leftover, "pre-acquire", turn.sessionId);
      } else {
        const aside = await moveAside(this.root, dir, `${ws.workspaceId}-${Date.now()}`);
        this.countEviction("pre-acquire", state, dir, turn.sessionId, { movedTo: aside });
      }
    }
    const [repo, entries] = await Promise.all([this.deps.registry.repository(ws.repoId), this.deps.overlay.entries(ws)]);
    const env = await materialise({ root: this.root, workspaceId: ws.workspaceId, sourcePath: repo.sourcePath, baseCommit: ws.baseCommit, entries, spares: this.spares });
    this.track(saveManifest(this.root, env).catch((err: unknown) => this.deps.logger.warn({ err }, "turn pool: saving the manifest failed")));
    return env;
  }

  private async insertRow(turn: Turn, ws: Workspace, old: Turn | undefined): Promise<void> {
    let resolve!: () => void;
    turn.rowWritten = new Promise<void>((r) => (resolve = r));
    try {
      const events: EventInput[] = [this.turnEvent(ws, "turn.started", turn, { other: old?.id ?? "", warm: turn.warm })];
      // Cancelled or superseded while acquiring: the row is written in its final state.
      if (turn.state === "cancelled") events.push(this.turnEvent(ws, "turn.cancelled", turn, { reason: turn.endReason }));
      if (turn.state === "superseded") events.push(this.turnEvent(ws, "turn.superseded", turn, { other: turn.supersededBy ?? "" }));
      // One statement in autocommit (turn row + events, atomic): one round trip instead of four.
      await this.deps.registry.uow.statement(events, (db, rows) => store.insertTurnWithEvents(db, this.rowOf(turn), rows));
    } finally {
      resolve();
    }
  }

  // ---- EndTurn ------------------------------------------------------------------------

  async endTurn(turnId: string, outcome: store.OutcomeName, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<{ turn: Turn; captured: string[] }> {
    const turn = this.turns.get(turnId) ?? (await this.turnFromDb(turnId));
    await assertOwner(turn.sessionId);
    if (turn.state === "running" && !this.turns.has(turn.id)) {
      throw failedPrecondition("TURN_NOT_ON_THIS_SERVER", `turn ${turnId} runs on another server`, { turn_id: turnId });
    }
    if (turn.state !== "running") return this.alreadyFinished(turn, outcome);
    await turn.started.catch(() => {});
    const state = this.states.get(turn.workspaceId)!;
    return this.enqueue(state, async () => {
      if (turn.state !== "running") return this.alreadyFinished(turn, outcome);
      const env = turn.env;
      let captured: string[] = [];
      if (env && state.env === env) {
        const r = await this.capture(state.ws, env);
        captured = r.captured;
        if (r.failed.length > 0) {
          throw failedPrecondition(
            "CAPTURE_INCOMPLETE",
            `turn ${turnId}: ${r.failed.length} path(s) could not be captured into the overlay (${r.failed[0]!.reason}); the turn is still running and its environment is kept — resolve and call EndTurn again`,
            { turn_id: turnId, paths: r.failed.map((f) => f.path).join(","), reason: r.failed[0]!.reason, captured: String(captured.length) },
          );
        }
      }
      const now = this.deps.clock.now();
      const park = outcome === "failed" ? undefined : outcome === "completed" ? "idle" : "approval";
      const events = [this.turnEvent(state.ws, "turn.ended", turn, { outcome })];
      if (park) events.push(this.turnEvent(state.ws, "turn.parked", turn, { outcome }));
      await turn.rowWritten;
      await this.deps.registry.uow.statement(events, (db, rows) => store.finishTurnWithEvents(db, turn.id, "ended", { outcome, at: new Date(now) }, rows), (finished) => finished);
      turn.state = "ended";
      turn.outcome = outcome;
      turn.endedAt = now;
      turn.abort.abort();
      turn.settledDone = true;
      if (state.turn === turn) state.turn = undefined;
      this.forgetLater(turn);
      if (!env || state.env !== env) return { turn, captured };
      if (!park) {
        await this.teardown(state, env, "turn-failed", turn.sessionId);
        this.unseat(state);
        return { turn, captured };
      }
      if (!this.trySeat(state)) {
        await this.teardown(state, env, "capacity", turn.sessionId);
        return { turn, captured };
      }
      state.slot = park;
      state.parkedAt = now;
      state.lastUsed = now;
      return { turn, captured };
    });
  }

  private alreadyFinished(turn: Turn, outcome: store.OutcomeName): { turn: Turn; captured: string[] } {
    if (turn.state === "ended" && turn.outcome === outcome) return { turn, captured: [] };
    throw failedPrecondition("TURN_NOT_RUNNING", `turn ${turn.id} is ${turn.state.toUpperCase()}${turn.endReason ? ` (${turn.endReason})` : ""}`, {
      turn_id: turn.id,
      state: turn.state.toUpperCase(),
      reason: turn.endReason,
      superseded_by: turn.supersededBy ?? "",
    });
  }

  // ---- CancelTurn, heartbeat, lists ---------------------------------------------------

  async cancelTurn(turnId: string, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<{ cancelled: boolean; settled: boolean }> {
    const turn = this.turns.get(turnId) ?? (await this.turnFromDb(turnId));
    await assertOwner(turn.sessionId);
    if (turn.state !== "running" || !this.turns.has(turn.id)) {
      return { cancelled: false, settled: turn.settledDone || !this.turns.has(turn.id) };
    }
    const state = this.states.get(turn.workspaceId)!;
    this.stopTurn(state, turn, "cancelled", "cancelled");
    const settled = turn.settled!;
    await this.finishInDb(turn, "cancelled", { reason: "cancelled" }, [this.turnEvent(state.ws, "turn.cancelled", turn, { reason: "cancelled" })]);
    const done = await Promise.race([settled.then(() => true, () => true), delay(50).then(() => false)]);
    return { cancelled: true, settled: done };
  }

  /** Marks a running turn stopped (synchronously) and queues its environment's capture and teardown. */
  private stopTurn(state: WsState, turn: Turn, to: "cancelled", reason: string, evict: EvictReason = "turn-cancelled"): void {
    turn.state = to;
    turn.endReason = reason;
    turn.endedAt = this.deps.clock.now();
    turn.abort.abort();
    if (state.turn === turn) state.turn = undefined;
    turn.settled = this.enqueue(state, async () => {
      await turn.started.catch(() => {});
      if (turn.env && state.env === turn.env) {
        await this.teardown(state, turn.env, evict, turn.sessionId);
        if (!state.turn) this.unseat(state);
      }
    }).finally(() => (turn.settledDone = true));
    this.track(turn.settled);
    this.forgetLater(turn);
  }

  async heartbeat(turnId: string): Promise<{ current: boolean; turn: Turn }> {
    const turn = this.turns.get(turnId) ?? (await this.turnFromDb(turnId));
    return { current: turn.state === "running" && this.turns.has(turn.id), turn };
  }

  async listTurns(sessionId: string | undefined): Promise<Turn[]> {
    if (sessionId === undefined) {
      return [...this.turns.values()].filter((t) => t.state === "running").sort((a, b) => b.startedAt - a.startedAt);
    }
    const rows = await store.listBySession(this.deps.registry.db, sessionId, 200);
    return rows.map((r) => {
      const live = this.turns.get(r.id);
      return live && live.rowWritten ? live : turnFromRow(r);
    });
  }

  /** Session of a turn (for the ownership check before touching it). */
  async turn(turnId: string): Promise<Turn> {
    return this.turns.get(turnId) ?? (await this.turnFromDb(turnId));
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

  /** The workspace map of the session's environment, within the budget (GetWorkspaceMap). */
  workspaceMap(ws: Workspace, signal: AbortSignal): Promise<MapResult> {
    return this.deps.maps.getMap(this.environmentPathOf(ws), { signal });
  }

  /** The workspace's environment directory (whether or not it exists now). */
  environmentPathOf(ws: Workspace): string {
    return this.states.get(ws.workspaceId)?.env?.path ?? envPath(this.root, ws.workspaceId);
  }

  /** Evicts parked environments past their keep-alive. Called by a timer; tests call it directly. */
  sweep(): Promise<void> {
    const now = this.deps.clock.now();
    this.spares.expire();
    const jobs: Promise<unknown>[] = [];
    for (const s of this.states.values()) {
      if (!s.seated || !s.env) continue;
      const reason: EvictReason | undefined =
        s.slot === "idle" && now - s.parkedAt >= this.deps.settings.idleTtlMs ? "idle-expiry"
        : s.slot === "approval" && now - s.parkedAt >= this.deps.settings.approvalTtlMs ? "approval-expiry"
        : undefined;
      if (!reason) continue;
      this.unseat(s);
      jobs.push(this.enqueue(s, () => this.evictParked(s, reason)));
    }
    const all = Promise.allSettled(jobs).then(() => {});
    this.track(all);
    return all;
  }

  // ---- teardown and capture -----------------------------------------------------------

  /** A parked environment's eviction (capacity, expiry, session end), unless a turn took it meanwhile. */
  private async evictParked(state: WsState, reason: EvictReason): Promise<void> {
    if (state.turn || !state.env) return;
    await this.teardown(state, state.env, reason, state.ws.sessionId);
  }

  /**
   * Capture, then identity-checked removal. Idempotent per Environment. When some change could
   * not be captured the directory is kept under .unsaved/ (never deleted) and the paths logged.
   */
  private teardown(state: WsState, env: Environment, reason: EvictReason, sessionId: string): Promise<TeardownResult> {
    if (state.env === env) state.env = undefined;
    if (env.teardown) return env.teardown;
    env.teardown = (async (): Promise<TeardownResult> => {
      let captured: string[] = [];
      let failed: { path: string; reason: string }[] = [];
      let gone = false;
      try {
        const r = await this.capture(state.ws, env);
        captured = r.captured;
        failed = r.failed;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") gone = true;
        else failed = [{ path: "*", reason: err instanceof Error ? err.message : String(err) }];
      }
      const preserve = failed.length > 0;
      const { outcome, deleting } = gone ? { outcome: "absent" as const, deleting: Promise.resolve() } : await removeIfOwned(this.root, env.path, env.token, preserve, preserve ? `${env.workspaceId}-${env.token}` : env.token);
      this.track(deleting);
      if (preserve) {
        this.deps.logger.error({ path: env.path, reason, failed }, "turn pool: changes could not be captured into the overlay; the environment is kept under .unsaved/");
      }
      if (outcome === "foreign") this.deps.logger.warn({ path: env.path, token: env.token, reason }, "turn pool: teardown skipped: the directory belongs to another environment");
      this.countEviction(reason, state, env.path, sessionId, { outcome, captured: captured.length });
      return { outcome, capturedPaths: captured, failedPaths: failed.map((f) => f.path) };
    })();
    return env.teardown;
  }

  /** Captures the directory's changes into the overlay through writeFile/deleteFile (claims, events). */
  private async capture(ws: Workspace, env: Environment): Promise<{ captured: string[]; failed: { path: string; reason: string }[] }> {
    const d = await diff(env);
    const captured: string[] = [];
    const failed: { path: string; reason: string }[] = [];
    for (const w of d.written) {
      try {
        await this.deps.overlay.writeFile({ workspace: ws, path: w.path, content: w.content });
        env.manifest.set(w.path, w.entry);
        captured.push(w.path);
      } catch (err) {
        failed.push({ path: w.path, reason: reasonOf(err) });
      }
    }
    for (const p of d.deleted) {
      try {
        await this.deps.overlay.deleteFile({ workspace: ws, path: p });
        env.manifest.delete(p);
        captured.push(p);
      } catch (err) {
        if (err instanceof BerthError && err.kind === "not_found") {
          env.manifest.delete(p);
          captured.push(p);
        } else failed.push({ path: p, reason: reasonOf(err) });
      }
    }
    for (const t of d.touched) env.manifest.set(t.path, t.entry);
    if (captured.length > 0 || d.touched.length > 0) {
      this.track(saveManifest(this.root, env).catch((err: unknown) => this.deps.logger.warn({ err }, "turn pool: saving the manifest failed")));
    }
    if (captured.length > 0) this.deps.logger.info({ workspaceId: ws.workspaceId, paths: captured.length, failed: failed.length }, "turn: captured the directory's changes into the overlay");
    return { captured, failed };
  }

  private countEviction(reason: EvictReason, state: WsState, dir: string, sessionId: string, extra: Record<string, unknown>): void {
    this.evictions.set(reason, (this.evictions.get(reason) ?? 0n) + 1n);
    this.deps.logger.info({ reason, path: dir, workspaceId: state.workspaceId, ...extra }, `turn pool: evict reason=${reason}`);
    const ws = state.ws;
    this.track(this.record([{
      kind: "env.evicted",
      repoId: ws.repoId,
      sessionId,
      workspaceId: ws.workspaceId,
      agentId: ws.agentId,
      changesetId: ws.changeset.id,
      occurredAt: this.deps.clock.now(),
      reason,
      payload: { case: "environmentEvicted", value: { environmentPath: dir, reason } },
    }]));
  }

  // ---- session end --------------------------------------------------------------------

  private async watchSessionEnds(hub: EventHub): Promise<void> {
    while (!this.stopWatching.signal.aborted) {
      try {
        for await (const e of hub.watch({ kinds: SESSION_ENDING }, this.stopWatching.signal)) this.sessionEnded(e.workspaceId, e.kind);
      } catch (err) {
        if (this.stopWatching.signal.aborted) return;
        if (err instanceof BerthError && (err.reason === "SERVER_STOPPING" || err.reason === "EVENTS_UNAVAILABLE")) return;
        this.deps.logger.warn({ err }, "turns: the session-end watch ended; watching again");
        await delay(100);
      }
    }
  }

  /** A session ended (stranded, abandoned, destroyed, expired): its running turn stops; its environment is captured, then torn down. */
  sessionEnded(workspaceId: string, kind: string): void {
    const state = this.states.get(workspaceId);
    if (!state) return;
    const running = state.turn;
    if (running) {
      this.stopTurn(state, running, "cancelled", kind, "session-ended");
      this.track(this.finishInDb(running, "cancelled", { reason: kind }, [this.turnEvent(state.ws, "turn.cancelled", running, { reason: kind })]).catch((err: unknown) => this.deps.logger.warn({ err }, "turns: recording a cancelled turn failed")));
      return;
    }
    if (state.env) {
      this.unseat(state);
      this.track(this.enqueue(state, () => this.evictParked(state, "session-ended")));
    }
  }

  // ---- plumbing -----------------------------------------------------------------------

  private stateOf(ws: Workspace): WsState {
    let s = this.states.get(ws.workspaceId);
    if (!s) {
      s = { workspaceId: ws.workspaceId, ws, lane: Promise.resolve(), turn: undefined, env: undefined, seated: false, slot: undefined, parkedAt: 0, lastUsed: 0 };
      this.states.set(ws.workspaceId, s);
    }
    s.ws = ws;
    return s;
  }

  private enqueue<T>(state: WsState, job: () => Promise<T>): Promise<T> {
    const run = state.lane.then(job, job);
    state.lane = run.catch(() => {});
    return run;
  }

  private track(p: Promise<unknown>): void {
    this.background.add(p);
    void p.finally(() => this.background.delete(p)).catch(() => {});
  }

  private async finishInDb(turn: Turn, to: "superseded" | "cancelled", fields: { supersededBy?: string; reason?: string }, events: EventInput[]): Promise<void> {
    if (!turn.rowWritten) return; // the row insert (still to come) writes the final state
    await turn.rowWritten;
    const at = new Date(turn.endedAt ?? this.deps.clock.now());
    await this.deps.registry.uow.statement(events, (db, rows) => store.finishTurnWithEvents(db, turn.id, to, { ...fields, at }, rows), (finished) => finished);
  }

  private async record(events: EventInput[]): Promise<void> {
    try {
      // One INSERT in autocommit (no BEGIN/COMMIT round trips): the events are the whole change.
      if (events.length === 0) return;
      await this.deps.registry.uow.statement(events, (db, rows) => insertEvents(rows).execute(db));
    } catch (err) {
      this.deps.logger.warn({ err, kinds: events.map((e) => e.kind) }, "turns: storing events failed");
    }
  }

  private turnEvent(ws: Workspace, kind: string, turn: Turn, p: { other?: string; warm?: boolean; outcome?: store.OutcomeName; reason?: string }): EventInput {
    return {
      kind,
      repoId: ws.repoId,
      sessionId: turn.sessionId,
      workspaceId: ws.workspaceId,
      agentId: ws.agentId,
      changesetId: ws.changeset.id,
      occurredAt: this.deps.clock.now(),
      reason: p.reason,
      payload: {
        case: "turnChanged",
        value: { turnId: turn.id, clientTurnId: turn.clientTurnId ?? "", otherTurnId: p.other ?? "", outcome: outcomeEnum(p.outcome ?? null), warm: p.warm ?? false },
      },
    };
  }

  private rowOf(t: Turn): store.TurnRow {
    return {
      id: t.id,
      session_id: t.sessionId,
      workspace_id: t.workspaceId,
      repo_id: t.repoId,
      client_turn_id: t.clientTurnId,
      state: t.state,
      outcome: t.outcome,
      environment_path: t.environmentPath,
      warm: t.warm,
      superseded_by: t.supersededBy,
      end_reason: t.endReason,
      instance_id: this.deps.registry.instanceId ?? null,
      started_at: new Date(t.startedAt),
      ended_at: t.endedAt === null ? null : new Date(t.endedAt),
    };
  }

  private async turnFromDb(turnId: string): Promise<Turn> {
    const row = await store.findTurn(this.deps.registry.db, turnId);
    if (!row) throw notFound("TURN_NOT_FOUND", `turn ${turnId} does not exist`, { turn_id: turnId });
    return turnFromRow(row);
  }

  /** Keeps finished turns in memory for a while (heartbeats, retries), bounded. */
  private forgetLater(turn: Turn): void {
    this.finished.push(turn.id);
    while (this.finished.length > FINISHED_TURNS_KEPT) {
      const id = this.finished.shift()!;
      const t = this.turns.get(id);
      if (t && t.state !== "running") {
        this.turns.delete(id);
        if (t.clientTurnId) this.byClientId.delete(clientKey(t.sessionId, t.clientTurnId));
      }
    }
  }
}

function clientKey(sessionId: string, clientTurnId: string): string {
  return `${sessionId}\u0000${clientTurnId}`;
}

function turnFromRow(r: store.TurnRow): Turn {
  return {
    id: r.id,
    sessionId: r.session_id,
    workspaceId: r.workspace_id,
    repoId: r.repo_id,
    clientTurnId: r.client_turn_id,
    state: r.state,
    outcome: r.outcome,
    warm: r.warm,
    environmentPath: r.environment_path,
    startedAt: r.started_at.getTime(),
    endedAt: r.ended_at?.getTime() ?? null,
    supersededBy: r.superseded_by,
    endReason: r.end_reason,
    abort: new AbortController(),
    env: undefined,
    started: Promise.reject(new Error("not started here")).catch(() => undefined) as unknown as Promise<BeginResult>,
    rowWritten: Promise.resolve(),
    settled: undefined,
    settledDone: true,
  };
}

function reasonOf(err: unknown): string {
  if (err instanceof BerthError) return err.reason;
  return err instanceof Error ? err.message : String(err);
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
