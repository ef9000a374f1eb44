/**
 * Who holds a session's environment when several instances share one database (docs/turns.md,
 * "Several instances"). An environment is a directory on one instance's disk, so a turn RPC must
 * be served by the instance that holds it; the api layer asks here and routes (forwards) the call.
 *
 * The holder of a workspace's environment is:
 *  1. the instance whose turn for the workspace is RUNNING (turns_one_running: at most one) —
 *     unless that instance is dead (stopped, or silent for staleAfterMs by the database's clock):
 *     then the turn becomes ENDED/FAILED owner_lost here and now, and nobody holds it;
 *  2. else the instance of the workspace's most recent turn, if it is alive and still holds the
 *     environment (that turn ended parked — COMPLETED or AWAITING_APPROVAL — and the instance has
 *     not released it since: expiry, capacity, session end);
 *  3. else nobody: the instance asked serves the turn (a cold acquire there).
 * "Here" means this instance serves it: it holds the environment, or nobody does.
 *
 * The answer can be stale by the time the turn's row is written; PostgreSQL settles that race
 * (turns_one_running): the loser tears down what it built and is told TurnRaceLost.
 */
import type { Logger } from "pino";
import { BerthError } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import type { HolderRow } from "./store.js";
import { turnFromRow, type TurnRecords } from "./turn-records.js";
import type { Turn } from "./turn.js";

export type Placement =
  | { readonly here: true }
  | {
      readonly here: false;
      /** The instance holding the environment. */
      readonly instanceId: string;
      /** Its advertise_addr; undefined when it has none (it cannot be forwarded to). */
      readonly address: string | undefined;
    };

const HERE: Placement = { here: true };

/**
 * A BeginTurn whose row lost to another instance's turn (turns_one_running, or the same
 * client_turn_id): nothing of it remains here. The api routes the call to the winner's instance;
 * if this escapes, the client sees ABORTED TURN_RACE_LOST, which it may retry.
 */
export class TurnRaceLost extends BerthError {
  constructor(
    readonly winnerTurnId: string | undefined,
    readonly winnerInstanceId: string | null | undefined,
  ) {
    super("aborted", "TURN_RACE_LOST", `another instance started a turn for this session first${winnerTurnId ? ` (${winnerTurnId})` : ""}; retry`, {
      ...(winnerTurnId ? { turn_id: winnerTurnId } : {}),
      ...(winnerInstanceId ? { owner_instance: winnerInstanceId } : {}),
    });
  }
}

export interface OwnershipDeps {
  readonly records: TurnRecords;
  readonly logger: Logger;
  /** Whether this process's pool holds the workspace (a turn running or starting, an environment parked). */
  readonly holds: (workspaceId: string) => boolean;
  /** Whether this process started the turn (and still knows it). */
  readonly knows: (turnId: string) => boolean;
  /** The workspace of a turn row, whatever its lifecycle (undefined: gone). */
  readonly workspaceById: (workspaceId: string) => Promise<Workspace | undefined>;
}

export class EnvironmentOwnership {
  /** Lookups in flight per workspace: concurrent BeginTurns share one and stay in arrival order. */
  private readonly lookups = new Map<string, Promise<Placement>>();

  constructor(private readonly deps: OwnershipDeps) {}

  private get me(): string | undefined {
    return this.deps.records.instanceId;
  }

  /**
   * Where a turn RPC naming the session (BeginTurn, GetWorkspaceMap) is served. What this process
   * holds it serves without asking the database; `fresh` asks anyway (after a lost race).
   */
  ofSession(ws: Workspace, opts: { fresh?: boolean } = {}): Promise<Placement> {
    if (this.me === undefined) return Promise.resolve(HERE);
    if (!opts.fresh && this.deps.holds(ws.workspaceId)) return Promise.resolve(HERE);
    if (opts.fresh) return this.lookUp(ws);
    const inFlight = this.lookups.get(ws.workspaceId);
    if (inFlight) return inFlight;
    const p = this.lookUp(ws);
    this.lookups.set(ws.workspaceId, p);
    void p.finally(() => this.lookups.delete(ws.workspaceId)).catch(() => {});
    return p;
  }

  /**
   * Where a turn RPC naming a turn (EndTurn, CancelTurn, TurnHeartbeat) is served: the instance
   * running it. A turn this process started, or one that is not RUNNING (its row is final), is
   * answered here; a RUNNING turn of a dead instance is failed (owner_lost) and answered here.
   */
  async ofTurn(turn: Turn, ws: Workspace, options: { finishedToo?: boolean } = {}): Promise<Placement> {
    const me = this.me;
    // A finished turn is answered anywhere from its row — except where the answer is the running
    // instance's own (CancelTurn's `settled`: whether its teardown there has finished).
    const finishedHere = turn.state !== "running" && options.finishedToo !== true;
    if (me === undefined || this.deps.knows(turn.id) || finishedHere || !turn.instanceId || turn.instanceId === me) return HERE;
    const instance = await this.deps.records.instanceState(turn.instanceId);
    if (instance?.alive) return elsewhere(turn.instanceId, instance.advertise_addr);
    await this.ownerLost(turn, ws);
    return HERE;
  }

  /** After a forward found the holder unreachable: whether PostgreSQL confirms it is gone (then marked stopped). */
  confirmGone(instanceId: string): Promise<boolean> {
    return this.deps.records.confirmGone(instanceId);
  }

  private async lookUp(ws: Workspace): Promise<Placement> {
    const me = this.me;
    const rows = await this.deps.records.holders(ws.workspaceId);
    const running = rows.find((r) => r.state === "running");
    if (running) {
      if (!running.instance_id || running.instance_id === me) return HERE;
      if (running.alive) return elsewhere(running.instance_id, running.advertise_addr);
      const turn = await this.deps.records.turnFromDb(running.id);
      await this.ownerLost(turn, ws);
      return HERE;
    }
    const last = rows[0];
    if (last && last.instance_id && last.instance_id !== me && holdsParked(last)) return elsewhere(last.instance_id, last.advertise_addr);
    return HERE;
  }

  /**
   * The dead-owner sweep (every instance, periodically): RUNNING turns of instances that are
   * dead by the database's clock become ENDED/FAILED owner_lost with their events, so ListTurns,
   * WatchTurns and the pool answer the truth without waiting for a call to name the turn. Every
   * instance may sweep the same rows: the update is conditional (still running, owner still
   * dead), so each turn ends once. Returns how many it ended.
   */
  async failDeadOwners(limit = 100): Promise<number> {
    let n = 0;
    for (const row of await this.deps.records.runningOfDeadInstances(limit)) {
      const ws = await this.deps.workspaceById(row.workspace_id);
      if (!ws) continue;
      if (await this.deps.records.failLost(turnFromRow(row), ws)) {
        n++;
        this.deps.logger.warn({ turnId: row.id, sessionId: row.session_id, workspaceId: row.workspace_id, instance: row.instance_id }, "turns: the instance running this turn is gone; turn ENDED/FAILED (owner_lost, found by the sweep)");
      }
    }
    return n;
  }

  /** The turn's instance is dead: the turn becomes ENDED/FAILED owner_lost (with its turn.ended event). */
  private async ownerLost(turn: Turn, ws: Workspace): Promise<void> {
    const failed = await this.deps.records.failLost(turn, ws);
    if (failed) {
      this.deps.logger.warn({ turnId: turn.id, sessionId: turn.sessionId, workspaceId: turn.workspaceId, instance: turn.instanceId }, "turns: the instance running this turn is gone; turn ENDED/FAILED (owner_lost)");
    }
  }
}

/** The most recent turn ended parked on an instance that is alive and has not released the environment. */
function holdsParked(r: HolderRow): boolean {
  return r.alive && !r.environment_released && r.state === "ended" && (r.outcome === "completed" || r.outcome === "awaiting_approval");
}

function elsewhere(instanceId: string, address: string | null): Placement {
  return { here: false, instanceId, address: address ?? undefined };
}
