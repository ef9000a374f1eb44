/**
 * The turn scheduler: turns, the environment pool, steering and cancellation (docs/turns.md).
 *
 * Per workspace there is one WsState (pool.ts): the running turn, the environment, the pool seat
 * and a lane (a FIFO of directory work). Everything that decides — supersede, reject, cancel,
 * the reservation — happens synchronously when a request arrives; everything that touches the
 * directory runs in the lane, in arrival order. The rules that follow, and why:
 *  - Reserve before acquire: a running turn holds its seat from the moment BeginTurn is accepted,
 *    before any await. A second BeginTurn therefore always finds the running turn and takes the
 *    supersede branch, whose job (capture, then teardown of the displaced environment) runs
 *    before its own acquire — it never cold-acquires a second environment on the same path.
 *  - Identity-checked teardown (teardown.ts): idempotent (one promise per Environment) and
 *    removing a directory only while its marker holds that environment's token, so tearing down
 *    a displaced environment never removes its replacement.
 *  - Probe before warm reuse (acquire.ts): a parked environment is handed to a turn only after a
 *    liveness probe says its directory is still there; a dead one is rebuilt cold.
 *  - Never delete under a running turn: a turn's environment is torn down only once the turn is
 *    no longer running (superseded, cancelled, ended FAILED); evictions take only parked, seated
 *    environments and skip one a turn took meanwhile; busy seats are never evicted for room.
 *  - Nothing written is lost (capture.ts): capture runs at every EndTurn and before every
 *    teardown; what cannot be captured keeps the turn running (EndTurn) or the directory (.unsaved/).
 *
 * The pieces: pool.ts (seats, lanes, LRU eviction), acquire.ts (warm/cold), capture.ts,
 * teardown.ts, turn-records.ts (rows and events), idempotency.ts (client_turn_id, known turns),
 * session-ends.ts (how a session's end is learnt), ownership.ts (which instance holds a
 * session's environment, when several share the database). None of them imports this file.
 *
 * Several instances: PostgreSQL allows one RUNNING turn per workspace (turns_one_running). A
 * BeginTurn whose row insert loses to another instance's turn tears down what it acquired and
 * answers as its on_busy says — REJECT: TURN_IN_PROGRESS naming the running turn; SUPERSEDE:
 * TurnRaceLost, which the api routes to the winner's instance.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { Acquirer } from "./acquire.js";
import { Capture, captureIncomplete } from "./capture.js";
import { BaseSpares, envPath, probe, reportDeletionFailures, type Environment } from "./environment.js";
import { KnownTurns } from "./idempotency.js";
import type { MapResult } from "./map/index.js";
import type { WorkspaceMapService } from "./map/index.js";
import { EnvironmentOwnership, TurnRaceLost } from "./ownership.js";
import { Pool, type EvictReason, type PoolSettings, type PoolStats, type SlotState, type WsState } from "./pool.js";
import { sessionEndFollower } from "./session-ends.js";
import type * as store from "./store.js";
import { Teardowns } from "./teardown.js";
import { TurnRecords, TurnRowConflict, turnFromRow, type InstanceSettings } from "./turn-records.js";
import { newTurn, type BeginResult, type OnBusyName, type Turn } from "./turn.js";

export type { BeginResult, OnBusyName, Turn } from "./turn.js";
export type { EvictReason, PoolSettings, PoolStats, SlotState } from "./pool.js";
export type { InstanceSettings } from "./turn-records.js";
export { TurnRaceLost, type EnvironmentOwnership, type Placement } from "./ownership.js";

export interface TurnSchedulerDeps {
  readonly registry: WorkspaceRegistry;
  readonly overlay: OverlayPort;
  readonly maps: WorkspaceMapService;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: PoolSettings;
  /** The instances sharing the database: this one's name, when another is dead. */
  readonly instances?: InstanceSettings;
  /** Replaces the liveness probe (tests). */
  readonly probe?: (env: Environment) => Promise<boolean>;
}

export class TurnScheduler {
  private readonly known: KnownTurns;
  private readonly records: TurnRecords;
  private readonly pool: Pool;
  private readonly capture: Capture;
  private readonly teardowns: Teardowns;
  private readonly acquirer: Acquirer;
  private sweepTimer: NodeJS.Timeout | undefined;
  private readonly background = new Set<Promise<unknown>>();
  private readonly spares: BaseSpares;
  /** Which instance holds a session's environment (the api routes turn RPCs by it). */
  readonly ownership: EnvironmentOwnership;

  constructor(private readonly deps: TurnSchedulerDeps) {
    deps.registry.uow.addFollower("turns", sessionEndFollower(deps.registry, () => [...this.pool.all()].map((s) => s.workspaceId), (workspaceId, kind) => this.sessionEnded(workspaceId, kind)));
    // A RUNNING turn keeps its session connected: every activity flush renews its last_active_at.
    deps.registry.addActivityExtender(() => this.runningWorkspaces());
    const timeout = deps.settings.probeTimeoutMs ?? 1000;
    this.spares = new BaseSpares(deps.settings.root, deps.settings.spares ?? 2, () => deps.clock.now());
    reportDeletionFailures((dir, err) => deps.logger.error({ err, dir }, "could not delete a torn-down environment; it is left on disk"));
    const track = (p: Promise<unknown>) => this.track(p);
    const { root } = deps.settings;
    this.records = new TurnRecords(deps);
    this.known = new KnownTurns(this.records);
    this.pool = new Pool({ settings: deps.settings, clock: deps.clock, logger: deps.logger, evict: (s, reason) => this.evictLater(s, reason) });
    this.capture = new Capture({ root, overlay: deps.overlay, logger: deps.logger, track });
    this.teardowns = new Teardowns({ root, logger: deps.logger, pool: this.pool, records: this.records, capture: (ws, env) => this.capture.capture(ws, env), track });
    const probeFn = deps.probe ?? ((env: Environment) => probe(env, timeout));
    this.acquirer = new Acquirer({ ...deps, root, pool: this.pool, teardowns: this.teardowns, spares: this.spares, probe: probeFn, track });
    this.ownership = new EnvironmentOwnership({ records: this.records, logger: deps.logger, holds: (id) => this.pool.holds(id), knows: (id) => this.known.has(id) });
  }

  get root(): string {
    return this.deps.settings.root;
  }

  /** Marks turns orphaned by a previous incarnation, starts the expiry sweep and the session-end watch. */
  async start(): Promise<void> {
    const n = await this.records.failOrphaned();
    if (n > 0) this.deps.logger.info({ turns: n }, "turns: running turns of a previous incarnation marked ENDED/FAILED (server_restart)");
    const every = this.deps.settings.sweepIntervalMs ?? 1000;
    if (every > 0) {
      this.sweepTimer = setInterval(() => {
        this.sweep().catch((err: unknown) => this.deps.logger.warn({ err }, "turns: the expiry sweep failed"));
      }, every);
      this.sweepTimer.unref();
    }
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const t of this.known.values()) if (t.state === "running") t.abort.abort();
    await Promise.allSettled([...this.pool.all()].map((s) => s.lane));
    await Promise.allSettled([...this.background]);
    await this.spares.close();
  }

  // ---- BeginTurn ----------------------------------------------------------------------

  beginTurn(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal): Promise<BeginResult> {
    if (!clientTurnId) return this.begin(ws, undefined, onBusy, signal);
    return this.known.once(ws.sessionId, clientTurnId, (turn) => this.answerStored(turn, signal), () => this.begin(ws, clientTurnId, onBusy, signal));
  }

  /** A retry of a turn found in the database: answered here, unless it runs on another instance (routed there). */
  private async answerStored(turn: Turn, signal: AbortSignal): Promise<BeginResult> {
    if (turn.state === "running" && turn.instanceId && turn.instanceId !== this.records.instanceId) throw new TurnRaceLost(turn.id, turn.instanceId);
    return { turn, supersededTurnId: "", map: await this.deps.maps.getMap(turn.environmentPath, { signal }) };
  }

  private async begin(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal): Promise<BeginResult> {
    const state = this.pool.stateOf(ws);
    const old = state.turn;
    if (old && onBusy === "reject") throw await this.reject(ws, old);

    const now = this.deps.clock.now();
    const turn = newTurn(ws, clientTurnId, envPath(this.root, ws.workspaceId), now);
    // Synchronous from here to the lane: the steer is decided and the slot held before any await.
    if (old) {
      old.state = "superseded";
      old.supersededBy = turn.id;
      old.endedAt = now;
      old.abort.abort();
    }
    state.turn = turn;
    this.known.add(turn);
    const parked = { slot: state.slot, parkedAt: state.parkedAt };
    this.pool.reserve(state);

    // The map's wait starts as soon as the directory is in place, alongside the row insert.
    const mapSignal = AbortSignal.any([signal, turn.abort.signal]);
    let mapWait: Promise<MapResult> | undefined;
    const job = this.pool.enqueue(state, () => this.acquire(state, turn, old, parked, () => {
      mapWait = this.deps.maps.getMap(turn.environmentPath, { signal: mapSignal });
    }));
    const started = job.then(async () => {
      if (turn.state !== "running") {
        throw new BerthError("aborted", turn.state === "superseded" ? "TURN_SUPERSEDED" : "TURN_CANCELLED", `turn ${turn.id} was ${turn.state} before it started`, { turn_id: turn.id });
      }
      const map = await (mapWait ?? this.deps.maps.getMap(turn.environmentPath, { signal: mapSignal }));
      return { turn, supersededTurnId: old?.id ?? "", map };
    });
    const answered = started.catch((err: unknown) => {
      if (err instanceof TurnRowConflict) return this.afterLostRace(ws, clientTurnId, onBusy, signal);
      throw err;
    });
    turn.started = answered;
    answered.catch(() => this.known.forgetUnwritten(turn));
    return answered;
  }

  /** REJECT: TURN_IN_PROGRESS naming the running turn, stored as a turn.rejected event. */
  private async reject(ws: Workspace, running: Turn): Promise<BerthError> {
    await this.records.record([this.records.turnEvent(ws, "turn.rejected", running, { reason: "TURN_IN_PROGRESS" })]);
    return failedPrecondition("TURN_IN_PROGRESS", `session ${ws.sessionId} has a running turn ${running.id}`, { session_id: ws.sessionId, turn_id: running.id });
  }

  /**
   * This BeginTurn's row lost to another instance's (its environment is torn down already):
   * the same client_turn_id is that turn; REJECT names the running turn; SUPERSEDE is routed to
   * the running turn's instance (TurnRaceLost).
   */
  private async afterLostRace(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal): Promise<BeginResult> {
    if (clientTurnId) {
      const row = await this.records.findByClientId(ws.sessionId, clientTurnId);
      if (row) {
        const known = this.known.get(row.id);
        return known?.started ?? this.answerStored(turnFromRow(row), signal);
      }
    }
    const running = await this.records.runningTurnOf(ws.workspaceId);
    if (running && onBusy === "reject") throw await this.reject(ws, turnFromRow(running));
    throw new TurnRaceLost(running?.id, running?.instance_id);
  }

  /** The lane job of a BeginTurn: settle the displaced environment, then a warm or cold acquire. */
  private async acquire(state: WsState, turn: Turn, old: Turn | undefined, parked: { slot: SlotState | undefined; parkedAt: number }, placed?: () => void): Promise<void> {
    const ws = state.ws;
    try {
      if (old) {
        if (state.env && old.env === state.env) {
          old.settled = this.teardowns.teardown(state, state.env, "supersede-busy", old.sessionId);
          await old.settled;
          old.settledDone = true;
        } else {
          old.settledDone = true;
        }
        await this.records.finishInDb(old, "superseded", { supersededBy: turn.id }, [this.records.turnEvent(ws, "turn.superseded", old, { other: turn.id })]);
        // The turn it replaces lost to another instance's: so would this one. Nothing is acquired.
        if (old.lostRace) throw new TurnRowConflict(undefined);
      }
      const { env, warm } = await this.acquirer.acquire(state, turn, parked);
      state.env = env;
      turn.env = env;
      turn.warm = warm;
      if (warm) this.pool.warmAcquires++;
      else this.pool.coldAcquires++;
      this.deps.logger.debug({ workspaceId: state.workspaceId, turnId: turn.id, warm }, warm ? "turn pool: warm" : "turn pool: cold acquire");
      placed?.();
      // Earlier turns' rows updated outside the lane (cancel, session end) are final first.
      await state.finishing;
      await this.records.insertRow(turn, ws, old);
    } catch (err) {
      const lost = err instanceof TurnRowConflict;
      const current = state.turn === turn;
      if (lost) {
        // Another instance's turn holds the session: this one never was (no row).
        turn.lostRace = true;
        turn.abort.abort();
        this.known.forget(turn);
      }
      if (current) {
        state.turn = undefined;
        turn.state = "cancelled";
        turn.endReason = lost ? "lost_race" : "acquire_failed";
      }
      if (lost && turn.env && state.env === turn.env) {
        await this.teardowns.teardown(state, turn.env, "lost-race", turn.sessionId).catch((e: unknown) => this.deps.logger.error({ err: e, workspaceId: state.workspaceId }, "turn: teardown after a lost race failed"));
      }
      if (current && !state.env && state.seated && state.slot === "busy") this.pool.unseat(state);
      if (lost) this.deps.logger.info({ workspaceId: state.workspaceId, turnId: turn.id }, "turn: another instance's turn runs for this session; this one is dropped");
      else this.deps.logger.error({ err, workspaceId: state.workspaceId, turnId: turn.id }, "turn: acquire failed");
      throw err;
    }
  }

  // ---- EndTurn ------------------------------------------------------------------------

  async endTurn(turnId: string, outcome: store.OutcomeName, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<{ turn: Turn; captured: string[] }> {
    const turn = this.known.get(turnId) ?? (await this.records.turnFromDb(turnId));
    await assertOwner(turn.sessionId);
    if (turn.state === "running" && !this.known.has(turn.id)) {
      throw failedPrecondition("TURN_NOT_ON_THIS_SERVER", `turn ${turnId} runs on another server`, { turn_id: turnId });
    }
    if (turn.state !== "running") return alreadyFinished(turn, outcome);
    // Ordering only: a failed start is the BeginTurn's error (and logged by acquire()).
    await turn.started?.catch(() => {});
    const state = this.pool.get(turn.workspaceId);
    // A start that failed meanwhile may have left nothing (the state forgotten): the turn is not running.
    if (!state) return alreadyFinished(turn, outcome);
    return this.pool.enqueue(state, async () => {
      if (turn.state !== "running") return alreadyFinished(turn, outcome);
      const env = turn.env;
      let captured: string[] = [];
      if (env && state.env === env) {
        const r = await this.capture.capture(state.ws, env);
        captured = r.captured;
        if (r.failed.length > 0) throw captureIncomplete(turnId, r);
      }
      const now = this.deps.clock.now();
      const park = outcome === "failed" ? undefined : outcome === "completed" ? "idle" : "approval";
      const events = [this.records.turnEvent(state.ws, "turn.ended", turn, { outcome })];
      if (park) events.push(this.records.turnEvent(state.ws, "turn.parked", turn, { outcome }));
      await this.records.finishEnded(turn, outcome, now, captured, events);
      turn.state = "ended";
      turn.outcome = outcome;
      turn.capturedPaths = captured;
      turn.endedAt = now;
      turn.abort.abort();
      turn.settledDone = true;
      if (state.turn === turn) state.turn = undefined;
      this.known.forgetLater(turn);
      if (!env || state.env !== env) return { turn, captured };
      if (!park) {
        await this.teardowns.teardown(state, env, "turn-failed", turn.sessionId);
        this.pool.unseat(state);
        return { turn, captured };
      }
      if (!this.pool.park(state, park, now)) await this.teardowns.teardown(state, env, "capacity", turn.sessionId);
      return { turn, captured };
    });
  }

  // ---- CancelTurn, heartbeat, lists ---------------------------------------------------

  async cancelTurn(turnId: string, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<{ cancelled: boolean; settled: boolean }> {
    const turn = this.known.get(turnId) ?? (await this.records.turnFromDb(turnId));
    await assertOwner(turn.sessionId);
    if (turn.state !== "running" || !this.known.has(turn.id)) {
      return { cancelled: false, settled: turn.settledDone || !this.known.has(turn.id) };
    }
    const state = this.pool.get(turn.workspaceId)!;
    const settled = this.stopTurn(state, turn, "cancelled", "cancelled");
    await this.finishOutsideLane(state, this.records.finishInDb(turn, "cancelled", { reason: "cancelled" }, [this.records.turnEvent(state.ws, "turn.cancelled", turn, { reason: "cancelled" })]));
    const done = await Promise.race([settled.then(() => true, () => true), delay(50).then(() => false)]);
    return { cancelled: true, settled: done };
  }

  /** Marks a running turn stopped (synchronously) and queues its environment's capture and teardown (returned). */
  private stopTurn(state: WsState, turn: Turn, to: "cancelled", reason: string, evict: EvictReason = "turn-cancelled"): Promise<unknown> {
    turn.state = to;
    turn.endReason = reason;
    turn.endedAt = this.deps.clock.now();
    turn.abort.abort();
    if (state.turn === turn) state.turn = undefined;
    const settled = this.pool.enqueue(state, async () => {
      await turn.started?.catch(() => {}); // ordering only: a failed start is the BeginTurn's error
      if (turn.env && state.env === turn.env) {
        await this.teardowns.teardown(state, turn.env, evict, turn.sessionId);
        if (!state.turn) this.pool.unseat(state);
      }
    }).finally(() => (turn.settledDone = true));
    turn.settled = settled;
    this.track(settled);
    this.known.forgetLater(turn);
    return settled;
  }

  async heartbeat(turnId: string): Promise<{ current: boolean; turn: Turn }> {
    const turn = this.known.get(turnId) ?? (await this.records.turnFromDb(turnId));
    return { current: turn.state === "running" && this.known.has(turn.id), turn };
  }

  async listTurns(sessionId: string | undefined): Promise<Turn[]> {
    if (sessionId === undefined) {
      return [...this.known.values()].filter((t) => t.state === "running").sort((a, b) => b.startedAt - a.startedAt);
    }
    const rows = await this.records.listBySession(sessionId, 200);
    return rows.map((r) => {
      const live = this.known.get(r.id);
      return live && live.rowWritten ? live : turnFromRow(r);
    });
  }

  /** Session of a turn (for the ownership check before touching it). */
  async turn(turnId: string): Promise<Turn> {
    return this.known.get(turnId) ?? (await this.records.turnFromDb(turnId));
  }

  stats(): PoolStats {
    return this.pool.stats();
  }

  /** The other live instances (their pools make up the rest of the cluster's). */
  otherInstances(): Promise<{ id: string; advertise_addr: string | null }[]> {
    return this.records.otherInstances();
  }

  /** Per-workspace states held: those with a turn, an environment or lane work (tests: bounded memory). */
  get workspaceStates(): number {
    return this.pool.size;
  }

  /** The workspaces with a RUNNING turn on this instance (the activity extender). */
  private *runningWorkspaces(): Iterable<string> {
    for (const s of this.pool.all()) if (s.turn?.state === "running") yield s.workspaceId;
  }

  /** The workspace map of the session's environment, within the budget (GetWorkspaceMap). */
  workspaceMap(ws: Workspace, signal: AbortSignal): Promise<MapResult> {
    return this.deps.maps.getMap(this.environmentPathOf(ws), { signal });
  }

  /** The workspace's environment directory (whether or not it exists now). */
  environmentPathOf(ws: Workspace): string {
    return this.pool.get(ws.workspaceId)?.env?.path ?? envPath(this.root, ws.workspaceId);
  }

  // ---- expiry and session end ---------------------------------------------------------

  /** Evicts parked environments past their keep-alive. Called by a timer; tests call it directly. */
  sweep(): Promise<void> {
    const now = this.deps.clock.now();
    this.spares.expire();
    const jobs = this.pool.unseatExpired(now).map(({ state, reason }) =>
      this.pool
        .enqueue(state, () => this.teardowns.evictParked(state, reason))
        .catch((err: unknown) => this.deps.logger.warn({ err, workspaceId: state.workspaceId, reason }, "turns: evicting an expired environment failed")),
    );
    const all = Promise.allSettled(jobs).then(() => {});
    this.track(all);
    return all;
  }

  /** A session ended (stranded, abandoned, destroyed, expired): its running turn stops; its environment is captured, then torn down. */
  sessionEnded(workspaceId: string, kind: string): void {
    const state = this.pool.get(workspaceId);
    if (!state) return;
    const running = state.turn;
    if (running) {
      void this.stopTurn(state, running, "cancelled", kind, "session-ended"); // tracked; its failures are logged by the teardown
      this.track(this.finishOutsideLane(state, this.records.finishInDb(running, "cancelled", { reason: kind }, [this.records.turnEvent(state.ws, "turn.cancelled", running, { reason: kind })])).catch((err: unknown) => this.deps.logger.warn({ err }, "turns: recording a cancelled turn failed")));
      return;
    }
    if (state.env) {
      this.pool.unseat(state);
      this.evictLater(state, "session-ended");
    }
  }

  // ---- plumbing -----------------------------------------------------------------------

  /** A row update made outside the lane: the workspace's next turn insert waits for it (one RUNNING row per workspace). */
  private finishOutsideLane<T>(state: WsState, update: Promise<T>): Promise<T> {
    state.finishing = Promise.allSettled([state.finishing, update]);
    this.pool.holdUntil(state, update); // the state (and its `finishing`) outlives the update
    return update;
  }

  /** Queues, on its lane, the eviction of a parked environment that has just been unseated. */
  private evictLater(state: WsState, reason: EvictReason): void {
    this.track(this.pool.enqueue(state, () => this.teardowns.evictParked(state, reason)));
  }

  private track(p: Promise<unknown>): void {
    this.background.add(p);
    // The one place a background failure (a teardown, an eviction) is seen unless its starter handled it.
    void p.finally(() => this.background.delete(p)).catch((err: unknown) => this.deps.logger.warn({ err }, "turns: background work failed"));
  }
}

/** A retried EndTurn with the same outcome gets the first one's answer, whichever instance ended it. */
function alreadyFinished(turn: Turn, outcome: store.OutcomeName): { turn: Turn; captured: string[] } {
  if (turn.state === "ended" && turn.outcome === outcome) return { turn, captured: [...(turn.capturedPaths ?? [])] };
  throw failedPrecondition("TURN_NOT_RUNNING", `turn ${turn.id} is ${turn.state.toUpperCase()}${turn.endReason ? ` (${turn.endReason})` : ""}`, {
    turn_id: turn.id,
    state: turn.state.toUpperCase(),
    reason: turn.endReason,
    superseded_by: turn.supersededBy ?? "",
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
