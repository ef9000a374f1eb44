/**
 * Turn rows and the events that report them: every read and write of the `turns` table and
 * every event the turn modules store goes through here, so how they are stored can change in
 * one place. A row change and its events are one statement (store.ts): they commit together.
 *
 * The insert may still be in flight when a turn is superseded or cancelled: finishers wait for
 * `rowWritten`, and a turn finished before its insert began is inserted in its final state.
 */
import type { Logger } from "pino";
import { outcomeEnum } from "../platform/proto-enums.js";
import type { Clock } from "../platform/clock.js";
import { notFound } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import { insertEvents, type EventInput } from "../platform/outbox.js";
import type { SessionFacts, WorkspaceRegistry } from "../sessions/registry.js";
import { sessionRowHolds } from "../sessions/registry.repository.js";
import type { EvictReason } from "./pool.js";
import * as store from "./store.js";
import type { LeftOut, StoredTurnKey, Turn, TurnExit } from "./turn.js";
import { instanceNameFree } from "../platform/instance-lock.js";
import { runningInstanceName, stopInstance } from "../sessions/lifecycle.repository.js";

export interface TurnRecordsDeps {
  readonly registry: WorkspaceRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly instances?: InstanceSettings;
}

/** What the turn modules need to know of the instances sharing the database. */
export interface InstanceSettings {
  /** This instance's stable name (its earlier incarnations' running turns are failed at start). */
  readonly name?: string;
  /** An instance whose heartbeat is older than this (by the database's clock), or that stopped, is dead. */
  readonly staleAfterMs: number;
}

/** Default: 3 missed heartbeats of the lifecycle's default 5 s. */
const DEFAULT_STALE_AFTER_MS = 15_000;

/** A turn row insert that violated a unique index: another turn is RUNNING for the workspace, or has the client_turn_id. */
export class TurnRowConflict extends Error {
  constructor(readonly constraint: string | undefined) {
    super(`turn row conflict${constraint ? ` (${constraint})` : ""}`);
    this.name = "TurnRowConflict";
  }
}

/**
 * A BeginTurn checked on its session's live object (api/session-access.ts ownedLiveSession) could
 * not go on as checked: its guarded row insert found the session's row no longer holding what the
 * check relied on (`row`: stranded, resumed, ended, rebased or its changeset moved, on any instance,
 * before its follower here learnt it), or the pool no longer held the environment simply parked
 * when the turn was placed (`pool`). Nothing of the turn was written; the api asks the row
 * (ownedSession) and answers as it says.
 */
export class LiveCheckStale extends Error {
  constructor(readonly why: "row" | "pool") {
    super(why === "row" ? "the session's row no longer holds what its live check relied on" : "the session's environment is no longer parked idle here");
    this.name = "LiveCheckStale";
  }
}

export class TurnRecords {
  constructor(private readonly deps: TurnRecordsDeps) {}

  get staleAfterMs(): number {
    return this.deps.instances?.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  }

  get instanceId(): string | undefined {
    return this.deps.registry.instanceId;
  }

  /** At start: RUNNING turns of a previous incarnation or a dead instance become ENDED/FAILED (server_restart); how many. */
  failOrphaned(): Promise<number> {
    return store.failOrphanedTurns(this.deps.registry.db, this.deps.registry.instanceId, this.deps.instances?.name, this.staleAfterMs, new Date(this.deps.clock.now()));
  }

  /** RUNNING turns of dead instances (the dead-owner sweep), at most `limit`. */
  runningOfDeadInstances(limit: number): Promise<store.TurnRow[]> {
    return store.runningTurnsOfDeadInstances(this.deps.registry.db, this.staleAfterMs, limit);
  }

  /** The workspace's RUNNING turn and its most recent one, with their instances' address and liveness. */
  holders(workspaceId: string): Promise<store.HolderRow[]> {
    return store.environmentHolders(this.deps.registry.db, workspaceId, this.staleAfterMs);
  }

  /** The other live instances sharing the database, with their advertise addresses (none without an instance id). */
  async otherInstances(): Promise<{ id: string; advertise_addr: string | null }[]> {
    const me = this.deps.registry.instanceId;
    if (me === undefined) return [];
    return (await store.liveInstances(this.deps.registry.db, this.staleAfterMs)).filter((i) => i.id !== me);
  }

  /**
   * An instance that could not be reached is gone if PostgreSQL says its process is: its
   * instance-name lock is free. It is then marked stopped, so that every instance treats it as
   * dead at once (its turns owner_lost, its sessions reconciled) instead of after its heartbeat
   * goes stale. False when it still holds its lock (unreachable from here, but alive) or stopped.
   */
  async confirmGone(instanceId: string): Promise<boolean> {
    const db = this.deps.registry.db;
    const name = await runningInstanceName(db, instanceId);
    if (name === undefined || !(await instanceNameFree(db, name))) return false;
    await stopInstance(db, instanceId);
    this.deps.logger.warn({ instance: instanceId, instanceName: name }, "turns: the instance holding an environment is gone (its name lock is free); marked stopped");
    return true;
  }

  instanceState(instanceId: string): Promise<{ advertise_addr: string | null; alive: boolean } | undefined> {
    return store.instanceState(this.deps.registry.db, instanceId, this.staleAfterMs);
  }

  /** The workspace's most recent turn: its session and its instance's name. */
  lastTurnOf(workspaceId: string): Promise<{ session_id: string; instance_name: string | null } | undefined> {
    return store.lastTurnOf(this.deps.registry.db, workspaceId);
  }

  /** This instance's stable name, when known. */
  get instanceName(): string | undefined {
    return this.deps.instances?.name;
  }

  /** The workspace's RUNNING turn on a live instance (a capture may still be coming from there). */
  runningOnLiveInstance(workspaceId: string): Promise<{ id: string; instance_id: string | null } | undefined> {
    return store.runningTurnOnLiveInstance(this.deps.registry.db, workspaceId, this.staleAfterMs);
  }

  runningTurnOf(workspaceId: string): Promise<store.TurnRow | undefined> {
    return store.runningTurnOf(this.deps.registry.db, workspaceId);
  }

  /**
   * A RUNNING turn of a dead instance becomes ENDED/FAILED (owner_lost), with its turn.ended event,
   * through the unit of work; false when it was no longer running or its instance is alive.
   */
  failLost(turn: Turn, ws: Workspace): Promise<boolean> {
    const events = [this.turnEvent(ws, "turn.ended", turn, { outcome: "failed", reason: "owner_lost" })];
    const at = new Date(this.deps.clock.now());
    return this.deps.registry.uow.statement(events, (db, rows) => store.failLostTurnWithEvents(db, turn.id, this.staleAfterMs, at, rows), (failed) => failed);
  }

  /** This instance tore down the workspace's environment with no turn after it: it no longer holds it. */
  async releaseEnvironment(workspaceId: string): Promise<void> {
    const me = this.deps.registry.instanceId;
    if (me === undefined) return;
    await store.releaseEnvironment(this.deps.registry.db, workspaceId, me);
  }

  findByClientId(sessionId: string, clientTurnId: string): Promise<store.TurnRow | undefined> {
    return store.findByClientId(this.deps.registry.db, sessionId, clientTurnId);
  }

  listBySession(sessionId: string, before: StoredTurnKey | undefined, limit: number): Promise<{ row: store.TurnRow; seq: number }[]> {
    return store.listBySession(this.deps.registry.db, sessionId, before && { startedAt: new Date(before[0]), seq: before[1] }, limit);
  }

  /**
   * The turn row and its events, in one statement. `facts`: the session was checked on its live
   * object, not read (a warm BeginTurn): the row is written only while the workspace row still
   * holds them, else LiveCheckStale("row") and nothing is written.
   */
  async insertRow(turn: Turn, ws: Workspace, old: Turn | undefined, facts?: SessionFacts): Promise<void> {
    let resolve!: () => void;
    turn.rowWritten = new Promise<void>((r) => (resolve = r));
    try {
      const events: EventInput[] = [this.turnEvent(ws, "turn.started", turn, { other: old?.id ?? "", warm: turn.warm })];
      // Cancelled or superseded while acquiring: the row is written in its final state.
      if (turn.state === "cancelled") events.push(this.turnEvent(ws, "turn.cancelled", turn, { reason: turn.endReason }));
      if (turn.state === "superseded") events.push(this.turnEvent(ws, "turn.superseded", turn, { other: turn.supersededBy ?? "" }));
      // One statement in autocommit (turn row + events, atomic): one round trip instead of four.
      if (facts === undefined) await this.deps.registry.uow.statement(events, (db, rows) => store.insertTurnWithEvents(db, this.rowOf(turn), rows));
      else if (!(await this.deps.registry.uow.statement(events, (db, rows) => store.insertTurnIfHeld(db, this.rowOf(turn), rows, sessionRowHolds(facts)), (written) => written))) {
        throw new LiveCheckStale("row");
      }
    } catch (err) {
      // turns_one_running or turns_client_id: another instance's turn got there first.
      const conflict = store.turnConflict(err);
      if (conflict) throw new TurnRowConflict(conflict.constraint);
      throw err;
    } finally {
      resolve();
    }
  }

  /** EndTurn's update of a running turn to ENDED with its outcome and what it recorded, and the events reporting it. */
  async finishEnded(turn: Turn, outcome: store.OutcomeName, now: number, recorded: { captured: readonly string[]; leftOut: readonly LeftOut[]; exit: TurnExit; commitMessages: readonly string[] }, events: EventInput[]): Promise<void> {
    await turn.rowWritten;
    const fields = { outcome, ...recorded, at: new Date(now) };
    await this.deps.registry.uow.statement(events, (db, rows) => store.finishTurnWithEvents(db, turn.id, "ended", fields, rows), (finished) => finished);
  }

  async finishInDb(turn: Turn, to: "superseded" | "cancelled", fields: { supersededBy?: string; reason?: string }, events: EventInput[]): Promise<void> {
    if (!turn.rowWritten) return; // the row insert (still to come) writes the final state
    await turn.rowWritten;
    const at = new Date(turn.endedAt ?? this.deps.clock.now());
    await this.deps.registry.uow.statement(events, (db, rows) => store.finishTurnWithEvents(db, turn.id, to, { ...fields, at }, rows), (finished) => finished);
  }

  async record(events: EventInput[]): Promise<void> {
    try {
      // One INSERT in autocommit (no BEGIN/COMMIT round trips): the events are the whole change.
      if (events.length === 0) return;
      await this.deps.registry.uow.statement(events, (db, rows) => insertEvents(rows).execute(db));
    } catch (err) {
      this.deps.logger.warn({ err, kinds: events.map((e) => e.kind) }, "turns: storing events failed");
    }
  }

  /** `exit`: turn.ended and turn.parked of an EndTurn carry how the command ended, when it was told. */
  turnEvent(ws: Workspace, kind: string, turn: Turn, p: { other?: string; warm?: boolean; outcome?: store.OutcomeName; reason?: string; exit?: TurnExit }): EventInput {
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
        value: {
          turnId: turn.id,
          clientTurnId: turn.clientTurnId ?? "",
          otherTurnId: p.other ?? "",
          outcome: outcomeEnum(p.outcome ?? null),
          warm: p.warm ?? false,
          ...(p.exit?.code !== undefined ? { exitCode: p.exit.code } : {}),
          exitSignal: p.exit?.signal ?? "",
        },
      },
    };
  }

  /** The env.evicted event of a teardown or an eviction (stored with record). */
  evictedEvent(ws: Workspace, sessionId: string, dir: string, reason: EvictReason): EventInput {
    return {
      kind: "env.evicted",
      repoId: ws.repoId,
      sessionId,
      workspaceId: ws.workspaceId,
      agentId: ws.agentId,
      changesetId: ws.changeset.id,
      occurredAt: this.deps.clock.now(),
      reason,
      payload: { case: "environmentEvicted", value: { environmentPath: dir, reason } },
    };
  }

  /** The turn.capture_failed event of a teardown whose capture could not complete (teardown.ts). */
  captureFailedEvent(ws: Workspace, sessionId: string, dir: string, keptAt: string, cause: EvictReason, failed: readonly { path: string; reason: string }[], captured: number): EventInput {
    return {
      kind: "turn.capture_failed",
      repoId: ws.repoId,
      sessionId,
      workspaceId: ws.workspaceId,
      agentId: ws.agentId,
      changesetId: ws.changeset.id,
      occurredAt: this.deps.clock.now(),
      reason: failed[0]?.reason ?? "",
      payload: { case: "captureFailed", value: { environmentPath: dir, keptAt, cause, failed: failed.slice(0, 200).map((f) => ({ path: f.path, reason: f.reason })), captured } },
    };
  }

  rowOf(t: Turn): store.TurnRow {
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

  async turnFromDb(turnId: string): Promise<Turn> {
    const row = await store.findTurn(this.deps.registry.db, turnId);
    if (!row) throw notFound("TURN_NOT_FOUND", `turn ${turnId} does not exist`, { turn_id: turnId });
    return turnFromRow(row);
  }
}

/** A turn as stored; not started by this process, so it has no `started` promise and is settled. */
export function turnFromRow(r: store.TurnRow): Turn {
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
    capturedPaths: r.captured_paths ?? null,
    leftOut: r.left_out ?? null,
    exit: { ...(r.exit_code != null ? { code: r.exit_code } : {}), ...(r.exit_signal ? { signal: r.exit_signal } : {}) },
    commitMessages: r.commit_messages ?? null,
    abort: new AbortController(),
    instanceId: r.instance_id,
    env: undefined,
    rowWritten: Promise.resolve(),
    settled: undefined,
    settledDone: true,
  };
}
