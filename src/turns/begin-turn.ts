/**
 * BeginTurn: the steer, the reservation, the lane job that acquires, and a start that does not
 * happen (docs/turns.md).
 *
 * Everything that decides — supersede or reject the running turn, hold the seat — happens
 * synchronously when the request arrives, before any await: a second BeginTurn therefore always
 * finds the running turn and supersedes it, and its lane job settles the displaced environment
 * (capture, teardown) before its own acquire, so it never cold-acquires a second environment on
 * the same path. The directory work runs in the workspace's lane, in arrival order.
 *
 * A start can still not happen after the steer: its row loses to another instance's turn
 * (TurnRowConflict: answered as the running turn, REJECT or TurnRaceLost), or the live session
 * check it was begun on is stale (LiveCheckStale: the environment left as if the call had not
 * come). Both are undone here, next to the start they undo, so a turn that never was leaves no
 * row, no event and no environment of its own.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import { isLiveHere, sessionFacts, type SessionFacts, type WorkspaceRegistry } from "../sessions/registry.js";
import type { Workspace } from "../sessions/workspace.js";
import type { Acquirer, ProbeAhead } from "./acquire.js";
import { envPath, type Environment } from "./environment.js";
import type { KnownTurns } from "./idempotency.js";
import type { MapResult, WorkspaceMapService } from "./map/index.js";
import { TurnRaceLost } from "./ownership.js";
import type { Pool, SlotState, WsState } from "./pool.js";
import type { Teardowns } from "./teardown.js";
import { LiveCheckStale, TurnRowConflict, turnFromRow, type TurnRecords } from "./turn-records.js";
import { newTurn, type BeginResult, type OnBusyName, type Turn } from "./turn.js";

export interface BeginTurnDeps {
  readonly registry: WorkspaceRegistry;
  readonly maps: WorkspaceMapService;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly root: string;
  readonly pool: Pool;
  readonly known: KnownTurns;
  readonly records: TurnRecords;
  readonly teardowns: Teardowns;
  readonly acquirer: Acquirer;
  /** The liveness probe of a parked environment (the scheduler's, or the tests' replacement). */
  readonly probe: (env: Environment) => Promise<boolean>;
}

export class TurnStarts {
  constructor(private readonly deps: BeginTurnDeps) {}

  /**
   * Starts the liveness probe of the environment parked for this session here, if there is one
   * and no turn runs in it, so that a BeginTurn's probe runs while its session check reads
   * PostgreSQL rather than after it; beginTurn() is handed the result. Reads nothing the caller
   * is told about (the owner is still checked first).
   */
  probeAhead(sessionId: string): ProbeAhead | undefined {
    const ws = this.deps.registry.liveWorkspace(sessionId);
    const state = ws && this.deps.pool.get(ws.workspaceId);
    const env = state?.env;
    if (env === undefined || state!.turn !== undefined) return undefined;
    const alive = this.deps.probe(env);
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
    return this.deps.known.once(ws.sessionId, clientTurnId, (turn) => this.answerStored(turn, signal), () => this.begin(ws, clientTurnId, onBusy, signal, ahead));
  }

  /** A retry of a turn found in the database: answered here, unless it runs on another instance (routed there). */
  private async answerStored(turn: Turn, signal: AbortSignal): Promise<BeginResult> {
    if (turn.state === "running" && turn.instanceId && turn.instanceId !== this.deps.records.instanceId) throw new TurnRaceLost(turn.id, turn.instanceId);
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
    const state = this.deps.pool.stateOf(ws);
    const old = state.turn;
    if (old && onBusy === "reject") throw await this.reject(ws, old);

    const now = this.deps.clock.now();
    const turn = newTurn(ws, clientTurnId, envPath(this.deps.root, ws.workspaceId), now);
    // Synchronous from here to the lane: the steer is decided and the slot held before any await.
    if (old) {
      old.state = "superseded";
      old.supersededBy = turn.id;
      old.endedAt = now;
      old.abort.abort();
    }
    state.turn = turn;
    this.deps.known.add(turn);
    const parked = { slot: state.slot, parkedAt: state.parkedAt };
    this.deps.pool.reserve(state);

    // The map's wait starts as soon as the directory is in place, alongside the row insert.
    const mapSignal = AbortSignal.any([signal, turn.abort.signal]);
    let mapWait: Promise<MapResult> | undefined;
    const job = this.deps.pool.enqueue(state, () => this.acquire(state, turn, old, parked, ahead, guard, () => {
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
    answered.catch(() => this.deps.known.forgetUnwritten(turn));
    return answered;
  }

  /** REJECT: TURN_IN_PROGRESS naming the running turn, stored as a turn.rejected event. */
  private async reject(ws: Workspace, running: Turn): Promise<BerthError> {
    await this.deps.records.record([this.deps.records.turnEvent(ws, "turn.rejected", running, { reason: "TURN_IN_PROGRESS" })]);
    return failedPrecondition("TURN_IN_PROGRESS", `session ${ws.sessionId} has a running turn ${running.id}`, { session_id: ws.sessionId, turn_id: running.id });
  }

  /**
   * This BeginTurn's row lost to another instance's (its environment is torn down already):
   * the same client_turn_id is that turn; REJECT names the running turn; SUPERSEDE is routed to
   * the running turn's instance (TurnRaceLost).
   */
  private async afterLostRace(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal): Promise<BeginResult> {
    if (clientTurnId) {
      const row = await this.deps.records.findByClientId(ws.sessionId, clientTurnId);
      if (row) {
        const known = this.deps.known.get(row.id);
        return known?.started ?? this.answerStored(turnFromRow(row), signal);
      }
    }
    const running = await this.deps.records.runningTurnOf(ws.workspaceId);
    if (running && onBusy === "reject") throw await this.reject(ws, turnFromRow(running));
    throw new TurnRaceLost(running?.id, running?.instance_id);
  }

  /** Whether `ws` is the live object and its environment is parked here (IDLE or AWAITING_APPROVAL) with no turn. */
  private parkedIdle(ws: Workspace): boolean {
    const state = this.deps.pool.get(ws.workspaceId);
    return isLiveHere(ws) && state !== undefined && state.turn === undefined && state.env !== undefined && state.seated && (state.slot === "idle" || state.slot === "approval");
  }

  /** The lane job of a BeginTurn: settle the displaced environment, then a warm or cold acquire. */
  private async acquire(state: WsState, turn: Turn, old: Turn | undefined, parked: { slot: SlotState | undefined; parkedAt: number }, ahead: ProbeAhead | undefined, guard: SessionFacts, placed?: () => void): Promise<void> {
    const ws = state.ws;
    try {
      if (old) {
        if (state.env && old.env === state.env) {
          old.settled = this.deps.teardowns.teardown(state, state.env, "supersede-busy", old.sessionId);
          await old.settled;
          old.settledDone = true;
        } else {
          old.settledDone = true;
        }
        await this.deps.records.finishInDb(old, "superseded", { supersededBy: turn.id }, [this.deps.records.turnEvent(ws, "turn.superseded", old, { other: turn.id })]);
        // The turn it replaces lost to another instance's: so would this one. Nothing is acquired.
        if (old.lostRace) throw new TurnRowConflict(undefined);
      }
      const { env, warm } = await this.deps.acquirer.acquire(state, turn, parked, ahead);
      state.env = env;
      turn.env = env;
      turn.warm = warm;
      if (warm) this.deps.pool.warmAcquires++;
      else this.deps.pool.coldAcquires++;
      this.deps.logger.debug({ workspaceId: state.workspaceId, turnId: turn.id, warm }, warm ? "turn pool: warm" : "turn pool: cold acquire");
      placed?.();
      // Earlier turns' rows updated outside the lane (cancel, session end) are final first.
      await state.finishing;
      await this.deps.records.insertRow(turn, ws, old, guard);
    } catch (err) {
      if (err instanceof LiveCheckStale) throw await this.afterStaleCheck(state, turn, parked, err);
      const lost = err instanceof TurnRowConflict;
      const current = state.turn === turn;
      if (lost) {
        // Another instance's turn holds the session: this one never was (no row).
        turn.lostRace = true;
        turn.abort.abort();
        this.deps.known.forget(turn);
      }
      if (current) {
        state.turn = undefined;
        turn.state = "cancelled";
        turn.endReason = lost ? "lost_race" : "acquire_failed";
      }
      if (lost && turn.env && state.env === turn.env) {
        await this.deps.teardowns.teardown(state, turn.env, "lost-race", turn.sessionId).catch((e: unknown) => this.deps.logger.error({ err: e, workspaceId: state.workspaceId }, "turn: teardown after a lost race failed"));
      }
      if (current && !state.env && state.seated && state.slot === "busy") this.deps.pool.unseat(state);
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
    this.deps.known.forget(turn);
    if (!current) return err;
    state.turn = undefined;
    turn.state = "cancelled";
    turn.endReason = "session_moved";
    const env = turn.env;
    if (env !== undefined && state.env === env && turn.warm && state.seated && (parked.slot === "idle" || parked.slot === "approval")) {
      state.slot = parked.slot;
      state.parkedAt = parked.parkedAt;
    } else if (env !== undefined && state.env === env) {
      await this.deps.teardowns.teardown(state, env, "lost-race", turn.sessionId).catch((e: unknown) => this.deps.logger.error({ err: e, workspaceId: state.workspaceId }, "turn: teardown after a stale session check failed"));
    }
    if (!state.env && state.seated && state.slot === "busy") this.deps.pool.unseat(state);
    this.deps.logger.info({ workspaceId: state.workspaceId, turnId: turn.id, parkedAgain: state.env === env && env !== undefined }, "turn: the session's row moved since its live check; this turn is dropped");
    return err;
  }
}
