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
 *    teardown; what cannot be captured keeps the turn running (EndTurn) or the directory
 *    (.unsaved/, with a turn.capture_failed event). A session stranded under a running turn
 *    (on any instance: the session-end watch follows every instance's commits) has the turn's
 *    edits captured into its overlay as the stranded session's ("ending" writes), and the
 *    turn's row stays RUNNING until that capture is done: ResumeSession waits for it
 *    (captureSettled), so the resumed session reads what the turn wrote. A graceful stop
 *    captures every running turn; a restart captures what a crash left (recoverLeftovers).
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
import { isTerminal } from "../sessions/changeset-states.js";
import type { Workspace } from "../sessions/workspace.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import { mapFromPaths } from "./map/from-paths.js";
import { isLiveHere, sessionFacts, type SessionFacts, type WorkspaceRegistry } from "../sessions/registry.js";
import { Acquirer, type ProbeAhead } from "./acquire.js";
import { Capture, captureIncomplete, type LeftOut } from "./capture.js";
import type { AgentCommits } from "./env-git.js";
import { readdir } from "node:fs/promises";
import { BaseSpares, baseInfo, envPath, loadLeftover, moveAside, probe, reportDeletionFailures, type Environment } from "./environment.js";
import { KnownTurns } from "./idempotency.js";
import type { MapResult } from "./map/index.js";
import type { WorkspaceMapService } from "./map/index.js";
import { EnvironmentOwnership, TurnRaceLost } from "./ownership.js";
import { Pool, type EvictReason, type PoolSettings, type PoolStats, type SlotState, type WsState } from "./pool.js";
import { sessionEndFollower } from "./session-ends.js";
import type * as store from "./store.js";
import { Teardowns, type CaptureMode } from "./teardown.js";
import { LiveCheckStale, TurnRecords, TurnRowConflict, turnFromRow, type InstanceSettings } from "./turn-records.js";
import { compareTurnKeys, newTurn, turnKey, type BeginResult, type OnBusyName, type StoredTurnKey, type Turn, type TurnExit } from "./turn.js";

export type { BeginResult, OnBusyName, StoredTurnKey, Turn, TurnExit, TurnKey } from "./turn.js";
export { compareTurnKeys, turnKey } from "./turn.js";
export type { EvictReason, PoolSettings, PoolStats, SlotState } from "./pool.js";
export type { InstanceSettings } from "./turn-records.js";
export { LiveCheckStale } from "./turn-records.js";
export { TurnRaceLost, type EnvironmentOwnership, type Placement } from "./ownership.js";

/** EndTurn's answer: the turn, what its capture wrote into the overlay, and what it left out on purpose. */
export interface EndTurnResult {
  readonly turn: Turn;
  readonly captured: string[];
  readonly leftOut: LeftOut[];
}

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
  private readonly probeFn: (env: Environment) => Promise<boolean>;
  private sweepTimer: NodeJS.Timeout | undefined;
  private deadOwnerTimer: NodeJS.Timeout | undefined;
  private readonly background = new Set<Promise<unknown>>();
  private readonly spares: BaseSpares;
  /** Which instance holds a session's environment (the api routes turn RPCs by it). */
  readonly ownership: EnvironmentOwnership;

  constructor(private readonly deps: TurnSchedulerDeps) {
    deps.registry.uow.addFollower("turns", sessionEndFollower(deps.registry, () => [...this.pool.all()].map((s) => s.workspaceId), (workspaceId, kind) => this.sessionEnded(workspaceId, kind)));
    // A parked environment holds the old base: after a RebaseWorkspace (on any instance) it must not be reused warm.
    deps.registry.uow.addFollower("turns-rebase", {
      apply: (e) => {
        if (e.kind === "workspace.rebased" && e.workspaceId) this.rebased(e.workspaceId);
      },
      resync: async () => {},
    });
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
    this.capture = new Capture({
      root,
      overlay: deps.overlay,
      logger: deps.logger,
      track,
      maxFileBytes: deps.settings.maxFileBytes ?? 8 * 1024 * 1024,
      excludeOf: async (ws) => (await deps.registry.repository(ws.repoId)).captureExclude,
      baseOf: async (ws) => {
        const gitDir = await deps.registry.locations.withCommit(await deps.registry.repository(ws.repoId), ws.baseCommit);
        return gitDir ? { commit: ws.baseCommit, ...(await baseInfo(gitDir, ws.baseCommit)) } : undefined;
      },
    });
    this.teardowns = new Teardowns({ root, logger: deps.logger, pool: this.pool, records: this.records, capture: (ws, env, options) => this.capture.capture(ws, env, options), track });
    this.probeFn = deps.probe ?? ((env: Environment) => probe(env, timeout));
    this.acquirer = new Acquirer({ ...deps, root, pool: this.pool, teardowns: this.teardowns, spares: this.spares, probe: this.probeFn, track });
    this.ownership = new EnvironmentOwnership({
      records: this.records,
      logger: deps.logger,
      holds: (id) => this.pool.holds(id),
      knows: (id) => this.known.has(id),
      workspaceById: (id) => deps.registry.workspaceById(id),
    });
  }

  get root(): string {
    return this.deps.settings.root;
  }

  /**
   * Marks turns orphaned by a previous incarnation, captures what a crash left in their
   * directories, starts the expiry sweep and the session-end watch. Before the server serves:
   * a ResumeSession after a restart reads what the crashed turn had written.
   */
  async start(): Promise<void> {
    const n = await this.records.failOrphaned();
    if (n > 0) this.deps.logger.info({ turns: n }, "turns: running turns of a previous incarnation marked ENDED/FAILED (server_restart)");
    await this.recoverLeftovers();
    const every = this.deps.settings.sweepIntervalMs ?? 1000;
    if (every > 0) {
      this.sweepTimer = setInterval(() => {
        this.sweep().catch((err: unknown) => this.deps.logger.warn({ err }, "turns: the expiry sweep failed"));
      }, every);
      this.sweepTimer.unref();
      // Dead owners' turns: as often as an instance can be found dead (a third of the staleness).
      this.deadOwnerTimer = setInterval(() => {
        this.ownership.failDeadOwners().catch((err: unknown) => this.deps.logger.warn({ err }, "turns: the dead-owner sweep failed"));
      }, Math.max(every, Math.floor(this.records.staleAfterMs / 3)));
      this.deadOwnerTimer.unref();
    }
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.deadOwnerTimer) clearInterval(this.deadOwnerTimer);
    await this.captureRunning();
    for (const t of this.known.values()) if (t.state === "running") t.abort.abort();
    await Promise.allSettled([...this.pool.all()].map((s) => s.lane));
    await Promise.allSettled([...this.background]);
    await this.spares.close();
  }

  // ---- BeginTurn ----------------------------------------------------------------------

  /**
   * Starts the liveness probe of the environment parked for this session here, if there is one
   * and no turn runs in it, so that a BeginTurn's probe runs while its session check reads
   * PostgreSQL rather than after it; beginTurn() is handed the result. Reads nothing the caller
   * is told about (the owner is still checked first).
   */
  probeAhead(sessionId: string): ProbeAhead | undefined {
    const ws = this.deps.registry.liveWorkspace(sessionId);
    const state = ws && this.pool.get(ws.workspaceId);
    const env = state?.env;
    if (env === undefined || state!.turn !== undefined) return undefined;
    const alive = this.probeFn(env);
    // Awaited (and a throw reported) by the acquire that uses it; one refused before it is not.
    alive.catch(() => {});
    return { env, alive };
  }

  /**
   * `facts`: the session was checked on its live object, not read from its row (api/session-access.ts
   * ownedLiveSession; only without a client_turn_id): the turn row is written only while the
   * workspace row holds them, and the turn is begun only on an environment parked here with no
   * turn running or starting — else LiveCheckStale, with nothing written and the environment as
   * it was (the caller then asks the row and begins as usual).
   */
  beginTurn(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal, ahead?: ProbeAhead, facts?: SessionFacts): Promise<BeginResult> {
    if (!clientTurnId) return this.begin(ws, undefined, onBusy, signal, ahead, facts);
    return this.known.once(ws.sessionId, clientTurnId, (turn) => this.answerStored(turn, signal), () => this.begin(ws, clientTurnId, onBusy, signal, ahead));
  }

  /** A retry of a turn found in the database: answered here, unless it runs on another instance (routed there). */
  private async answerStored(turn: Turn, signal: AbortSignal): Promise<BeginResult> {
    if (turn.state === "running" && turn.instanceId && turn.instanceId !== this.records.instanceId) throw new TurnRaceLost(turn.id, turn.instanceId);
    return { turn, supersededTurnId: "", map: await this.deps.maps.getMap(turn.environmentPath, { signal }) };
  }

  private async begin(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal, ahead?: ProbeAhead, facts?: SessionFacts): Promise<BeginResult> {
    // Checked on the live object: only a start on an environment parked here, with no turn to
    // supersede or reject on that check alone, and only while the object is still the live one
    // (a follower that dropped it may have queued the environment's eviction already).
    if (facts !== undefined && !this.parkedIdle(ws)) throw new LiveCheckStale("pool");
    // What the turn's row is written against: the caller's check (the session active, as read).
    // A strand committed after that check, and heard here before this turn was placed (so that
    // sessionEnded found no turn to stop), would otherwise leave a RUNNING turn of a stranded
    // session that nothing ends, and its resume waiting on it for ever.
    const guard = facts ?? { ...sessionFacts(ws), lifecycle: "active" as const };
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
    const job = this.pool.enqueue(state, () => this.acquire(state, turn, old, parked, ahead, guard, () => {
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

  /** Whether `ws` is the live object and its environment is parked here (IDLE or AWAITING_APPROVAL) with no turn. */
  private parkedIdle(ws: Workspace): boolean {
    const state = this.pool.get(ws.workspaceId);
    return isLiveHere(ws) && state !== undefined && state.turn === undefined && state.env !== undefined && state.seated && (state.slot === "idle" || state.slot === "approval");
  }

  /** The lane job of a BeginTurn: settle the displaced environment, then a warm or cold acquire. */
  private async acquire(state: WsState, turn: Turn, old: Turn | undefined, parked: { slot: SlotState | undefined; parkedAt: number }, ahead: ProbeAhead | undefined, guard: SessionFacts, placed?: () => void): Promise<void> {
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
      const { env, warm } = await this.acquirer.acquire(state, turn, parked, ahead);
      state.env = env;
      turn.env = env;
      turn.warm = warm;
      if (warm) this.pool.warmAcquires++;
      else this.pool.coldAcquires++;
      this.deps.logger.debug({ workspaceId: state.workspaceId, turnId: turn.id, warm }, warm ? "turn pool: warm" : "turn pool: cold acquire");
      placed?.();
      // Earlier turns' rows updated outside the lane (cancel, session end) are final first.
      await state.finishing;
      await this.records.insertRow(turn, ws, old, guard);
    } catch (err) {
      if (err instanceof LiveCheckStale) throw await this.afterStaleCheck(state, turn, parked, err);
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

  /**
   * A turn begun on its session's live check whose guarded row found the session moved
   * (LiveCheckStale): it never was (no row, no event). Its environment ends as if the BeginTurn
   * had not come: a parked one it took warm is parked again as it was (same slot, same keep-alive),
   * so that the session's end, when its follower here learns it, evicts it with that end's
   * capture (a stranded session's "ending" writes); one it built cold is torn down like a lost
   * race's (nothing was written to it). A turn stopped or superseded meanwhile is no longer the
   * state's: whoever did that tears its environment down, in the lane, after this job.
   */
  private async afterStaleCheck(state: WsState, turn: Turn, parked: { slot: SlotState | undefined; parkedAt: number }, err: LiveCheckStale): Promise<LiveCheckStale> {
    const current = state.turn === turn;
    turn.abort.abort();
    this.known.forget(turn);
    if (!current) return err;
    state.turn = undefined;
    turn.state = "cancelled";
    turn.endReason = "session_moved";
    const env = turn.env;
    if (env !== undefined && state.env === env && turn.warm && state.seated && (parked.slot === "idle" || parked.slot === "approval")) {
      state.slot = parked.slot;
      state.parkedAt = parked.parkedAt;
    } else if (env !== undefined && state.env === env) {
      await this.teardowns.teardown(state, env, "lost-race", turn.sessionId).catch((e: unknown) => this.deps.logger.error({ err: e, workspaceId: state.workspaceId }, "turn: teardown after a stale session check failed"));
    }
    if (!state.env && state.seated && state.slot === "busy") this.pool.unseat(state);
    this.deps.logger.info({ workspaceId: state.workspaceId, turnId: turn.id, parkedAgain: state.env === env && env !== undefined }, "turn: the session's row moved since its live check; this turn is dropped");
    return err;
  }

  // ---- EndTurn ------------------------------------------------------------------------

  /**
   * `exit`: how the turn's command ended, as the client says (recorded with the turn, and on its
   * turn.ended / turn.parked events). The capture also keeps the messages of the agent's own
   * commits in the environment (capture.ts commitMessages).
   */
  async endTurn(turnId: string, outcome: store.OutcomeName, exit: TurnExit, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<EndTurnResult> {
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
      let leftOut: LeftOut[] = [];
      let commits: AgentCommits = { head: undefined, messages: [] };
      if (env && state.env === env) {
        const [r, c] = await Promise.all([this.capture.capture(state.ws, env), this.capture.commitMessages(state.ws, env)]);
        captured = r.captured;
        leftOut = r.leftOut;
        commits = c;
        if (r.failed.length > 0) throw captureIncomplete(turnId, r);
      }
      const now = this.deps.clock.now();
      const park = outcome === "failed" ? undefined : outcome === "completed" ? "idle" : "approval";
      const events = [this.records.turnEvent(state.ws, "turn.ended", turn, { outcome, exit })];
      if (park) events.push(this.records.turnEvent(state.ws, "turn.parked", turn, { outcome, exit }));
      await this.records.finishEnded(turn, outcome, now, { captured, leftOut, exit, commitMessages: commits.messages }, events);
      // The row holds them: the next turn in this environment keeps only commits made after.
      if (env && commits.head !== undefined) env.headSeen = commits.head;
      turn.state = "ended";
      turn.outcome = outcome;
      turn.capturedPaths = captured;
      turn.leftOut = leftOut;
      turn.exit = exit;
      turn.commitMessages = commits.messages;
      turn.endedAt = now;
      turn.abort.abort();
      turn.settledDone = true;
      if (state.turn === turn) state.turn = undefined;
      this.known.forgetLater(turn);
      if (!env || state.env !== env) return { turn, captured, leftOut };
      if (!park) {
        await this.teardowns.teardown(state, env, "turn-failed", turn.sessionId);
        this.pool.unseat(state);
        return { turn, captured, leftOut };
      }
      if (!this.pool.park(state, park, now)) await this.teardowns.teardown(state, env, "capacity", turn.sessionId);
      return { turn, captured, leftOut };
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

  /**
   * Marks a running turn stopped (synchronously) and queues its environment's capture and
   * teardown (returned). `finishAfter`: the turn's row is finished (CANCELLED, `reason`) in the
   * lane after the capture, not at once — so that a RUNNING row means "its capture may still
   * come" to every instance (ResumeSession waits for it: captureSettled).
   */
  private stopTurn(state: WsState, turn: Turn, to: "cancelled", reason: string, evict: EvictReason = "turn-cancelled", mode: CaptureMode = "capture", finishAfter = false): Promise<unknown> {
    turn.state = to;
    turn.endReason = reason;
    turn.endedAt = this.deps.clock.now();
    turn.abort.abort();
    if (state.turn === turn) state.turn = undefined;
    const settled = this.pool.enqueue(state, async () => {
      await turn.started?.catch(() => {}); // ordering only: a failed start is the BeginTurn's error
      try {
        if (turn.env && state.env === turn.env) {
          await this.teardowns.teardown(state, turn.env, evict, turn.sessionId, mode);
          if (!state.turn) this.pool.unseat(state);
        }
      } finally {
        if (finishAfter) {
          await this.records.finishInDb(turn, "cancelled", { reason }, [this.records.turnEvent(state.ws, "turn.cancelled", turn, { reason })]).catch((err: unknown) => this.deps.logger.warn({ err, turnId: turn.id }, "turns: recording a cancelled turn failed"));
        }
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

  /** The running turns of this instance, newest first (ListTurns' order: compareTurnKeys). */
  runningTurns(): Turn[] {
    return [...this.known.values()].filter((t) => t.state === "running").sort((a, b) => compareTurnKeys(turnKey(b), turnKey(a)));
  }

  /** A page of a session's turns, newest first, after the turn with key `before` (the last of the previous page); each with its key. */
  async listTurns(sessionId: string, before: StoredTurnKey | undefined, limit: number): Promise<{ turn: Turn; key: StoredTurnKey }[]> {
    const rows = await this.records.listBySession(sessionId, before, limit);
    return rows.map(({ row: r, seq }) => {
      const live = this.known.get(r.id);
      return { turn: live && live.rowWritten ? live : turnFromRow(r), key: [r.started_at.getTime(), seq] as const };
    });
  }

  /** Session of a turn (for the ownership check before touching it). */
  async turn(turnId: string): Promise<Turn> {
    return this.known.get(turnId) ?? (await this.records.turnFromDb(turnId));
  }

  stats(): PoolStats {
    return this.pool.stats();
  }

  /** Teardowns and restarts whose capture could not complete (berth_turn_capture_failures_total). */
  get captureFailures(): number {
    return this.teardowns.captureFailures;
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
  /**
   * The map of the session's environment; with no live environment here (no turn ran yet, or it
   * was evicted), the map of the workspace's view — the base commit's files with the overlay
   * applied — so GetWorkspaceMap answers whenever the session is active.
   */
  async workspaceMap(ws: Workspace, signal: AbortSignal): Promise<MapResult> {
    if (this.pool.get(ws.workspaceId)?.env !== undefined) return this.deps.maps.getMap(this.environmentPathOf(ws), { signal });
    const gitDir = await this.deps.registry.locations.withCommit(await this.deps.registry.repository(ws.repoId), ws.baseCommit);
    const paths = new Set(gitDir ? (await baseInfo(gitDir, ws.baseCommit)).files.keys() : []);
    for (const e of await this.deps.overlay.entries(ws)) {
      if (e.content === null) paths.delete(e.path);
      else paths.add(e.path);
    }
    return { status: "ok", map: mapFromPaths(this.environmentPathOf(ws), paths, this.deps.maps.config, this.deps.clock.now()) };
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

  /**
   * A session ended (stranded, abandoned, destroyed, expired): its running turn stops; its
   * environment is captured, then torn down. Stranded: captured into the stranded session's
   * overlay ("ending"), which ResumeSession restores; the turn's row is finished after that.
   * Abandoned or destroyed: the overlay was deleted in the ending's own transaction, so there is
   * nothing to capture into; the directory is discarded (the ending was asked for, or the
   * changeset is terminal: GC destroys only terminal work).
   */
  /** The workspace moved to another base commit: its parked environment is torn down (RebaseWorkspace refuses while a turn runs). */
  private rebased(workspaceId: string): void {
    const state = this.pool.get(workspaceId);
    if (!state?.env || state.turn) return;
    this.pool.unseat(state);
    this.track(this.pool.enqueue(state, () => this.teardowns.evictParked(state, "rebased")));
  }

  sessionEnded(workspaceId: string, kind: string): void {
    const state = this.pool.get(workspaceId);
    if (!state) return;
    const mode: CaptureMode = kind === "session.stranded" ? "ending" : "discard";
    const running = state.turn;
    if (running) {
      void this.stopTurn(state, running, "cancelled", kind, "session-ended", mode, true); // tracked; its failures are logged by the teardown
      return;
    }
    if (state.env) {
      this.pool.unseat(state);
      this.track(this.pool.enqueue(state, () => this.teardowns.evictParked(state, "session-ended", mode)));
    }
  }

  /**
   * Resolves once no live instance has a RUNNING turn of the workspace: the capture of a
   * session stranded under a running turn is done (the owner finishes the turn's row after it).
   * UNAVAILABLE CAPTURE_PENDING (retryable) when that takes longer than CAPTURE_WAIT_MS, or than
   * the caller can wait: `callDeadline` (epoch ms) less what the caller's own work needs after
   * the wait, so that the caller hears why rather than its deadline passing (a capture on a
   * loaded machine takes seconds; an agent's deadline may be shorter).
   */
  async captureSettled(workspaceId: string, callDeadline?: number): Promise<void> {
    const deadline = performance.now() + captureWaitMs(callDeadline, Date.now());
    for (;;) {
      // The capture here runs in the lane: waited for directly, but no longer than the wait allows.
      const local = this.pool.get(workspaceId);
      const left = deadline - performance.now();
      if (local && left > 0) await Promise.race([local.lane.then(noop, noop), delay(left)]);
      const running = await this.records.runningOnLiveInstance(workspaceId);
      if (!running) return;
      if (performance.now() >= deadline) {
        throw new BerthError("unavailable", "CAPTURE_PENDING", `the running turn ${running.id} of workspace ${workspaceId} is still being captured into the overlay; retry`, {
          workspace_id: workspaceId,
          turn_id: running.id,
          owner_instance: running.instance_id ?? "",
        });
      }
      await delay(50);
    }
  }

  /**
   * Graceful stop: every running turn here is captured into the overlay (its session is still
   * active: ordinary writes, claims included), its directory torn down and its row finished
   * (CANCELLED, server_shutdown) — within the shutdown grace period. What is not done by then
   * stays in its directory with its saved manifest, for the next start (recoverLeftovers).
   */
  private async captureRunning(): Promise<void> {
    const jobs: Promise<unknown>[] = [];
    for (const t of [...this.known.values()]) {
      const state = t.state === "running" ? this.pool.get(t.workspaceId) : undefined;
      if (state && state.turn === t) jobs.push(this.stopTurn(state, t, "cancelled", "server_shutdown", "server-shutdown", "capture", true));
    }
    if (jobs.length === 0) return;
    const grace = this.deps.settings.shutdownGraceMs ?? 10_000;
    const done = await Promise.race([Promise.allSettled(jobs).then(() => true), delay(grace).then(() => false)]);
    if (done) this.deps.logger.info({ turns: jobs.length }, "turns: running turns captured into the overlay at shutdown");
    else this.deps.logger.error({ turns: jobs.length, graceMs: grace }, "turns: the capture of running turns did not finish within the shutdown grace period; their directories stay for the next start");
  }

  /**
   * At start: the directories a previous process left under the root (a crash, kill -9, a stop
   * that ran out of grace) are captured against their saved manifests, then torn down — into
   * the overlay as the session is now: stranded (the startup reconcile strands what a dead
   * incarnation owned: "ending" writes) or still active (ordinary writes). A workspace that has
   * ended for good, or whose changeset is terminal, has no overlay to write into: what differs
   * is reported failed (SESSION_ENDED) and the teardown keeps the directory under .unsaved/ with
   * a turn.capture_failed event, by the rule every failed capture follows (teardown.ts). A
   * directory without a matching manifest cannot be diffed: moved to .orphaned/ (kept) and
   * reported as a turn.capture_failed event (NO_MANIFEST); so is one that is no longer the
   * session's latest word: resumed since its turn ran here (SESSION_RESUMED), or a later turn
   * ran on another instance (LATER_TURN_ELSEWHERE). Nothing is deleted unreported.
   */
  private async recoverLeftovers(): Promise<void> {
    let names: string[];
    try {
      names = (await readdir(this.root, { withFileTypes: true })).filter((d) => d.isDirectory() && !d.name.startsWith(".")).map((d) => d.name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const id of names) {
      const ws = UUID.test(id) ? await this.deps.registry.workspaceById(id) : undefined;
      if (!ws) continue; // not a workspace's: the pre-acquire of a later turn, or an operator, decides
      const state = this.pool.stateOf(ws);
      if (state.env || state.turn) continue;
      await this.pool.enqueue(state, async () => {
        const leftover = await loadLeftover(this.root, id);
        // Captured only while the directory is the session's latest word: its most recent turn
        // ran here (an earlier incarnation of this name), for the session as it is now.
        // Resumed since, or a later turn elsewhere: writing the old files now would overwrite,
        // blindly, what was written meanwhile.
        const last = leftover ? await this.records.lastTurnOf(id) : undefined;
        const name = this.records.instanceName;
        const why = !leftover ? "NO_MANIFEST" : !last ? "NO_TURN" : last.session_id !== ws.sessionId ? "SESSION_RESUMED" : name !== undefined && last.instance_name !== name ? "LATER_TURN_ELSEWHERE" : undefined;
        const ranFor = last?.session_id;
        if (why) {
          const aside = await moveAside(this.root, envPath(this.root, id), `${id}-${Date.now()}`);
          this.teardowns.captureFailures++;
          this.deps.logger.error({ workspaceId: id, movedTo: aside, reason: why }, "turns: a directory left by a previous process cannot be captured; kept under .orphaned/");
          await this.records.record([this.records.captureFailedEvent(ws, ranFor ?? ws.sessionId, envPath(this.root, id), aside ?? "", "server-restart", [{ path: "*", reason: why }], 0)]);
          return;
        }
        if (!leftover) return;
        // Ended for good meanwhile: no overlay to write into, and nobody asked for this directory's
        // edits to go (they were never captured) — kept and reported, as any capture that fails.
        const live = ws.lifecycle === "active" || ws.lifecycle === "stranded";
        const mode: CaptureMode = !live || isTerminal(ws.changeset.state) ? "nowhere" : ws.lifecycle === "stranded" ? "ending" : "capture";
        const r = await this.teardowns.teardown(state, leftover, "server-restart", ws.sessionId, mode);
        this.deps.logger.info({ workspaceId: id, mode, captured: r.capturedPaths.length, failed: r.failedPaths.length }, "turns: captured what a previous process left in an environment");
      }).catch((err: unknown) => this.deps.logger.error({ err, workspaceId: id }, "turns: recovering a directory left by a previous process failed; it stays on disk"));
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
function alreadyFinished(turn: Turn, outcome: store.OutcomeName): EndTurnResult {
  if (turn.state === "ended" && turn.outcome === outcome) return { turn, captured: [...(turn.capturedPaths ?? [])], leftOut: [...(turn.leftOut ?? [])] };
  throw failedPrecondition("TURN_NOT_RUNNING", `turn ${turn.id} is ${turn.state.toUpperCase()}${turn.endReason ? ` (${turn.endReason})` : ""}`, {
    turn_id: turn.id,
    state: turn.state.toUpperCase(),
    reason: turn.endReason,
    superseded_by: turn.supersededBy ?? "",
  });
}

/** The longest ResumeSession waits for the capture of a stranded session's running turn. */
const CAPTURE_WAIT_MS = 10_000;
/** Of a call's time left, what is kept for its work after the capture wait (at most a quarter of it). */
const AFTER_CAPTURE_RESERVE_MS = 1_000;

/** How long a caller with `callDeadline` (epoch ms; none: CAPTURE_WAIT_MS) may wait for a capture, at `now`. */
export function captureWaitMs(callDeadline: number | undefined, now: number): number {
  if (callDeadline === undefined) return CAPTURE_WAIT_MS;
  const left = callDeadline - now;
  return Math.max(0, Math.min(CAPTURE_WAIT_MS, left - Math.min(AFTER_CAPTURE_RESERVE_MS, left / 4)));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function noop(): void {}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
