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
 * The pieces: begin-turn.ts (BeginTurn: the steer, the reservation, a start that does not
 * happen), end-turn.ts (EndTurn: capture, then park or tear down), turn-stops.ts (CancelTurn, a
 * session's end, a graceful stop; ResumeSession's wait for their capture), restart-recovery.ts
 * (what a crash left), pool.ts (seats, lanes, LRU eviction), acquire.ts (warm/cold), capture.ts,
 * teardown.ts, turn-records.ts (rows and events), idempotency.ts (client_turn_id, known turns),
 * session-ends.ts (how a session's end is learnt), ownership.ts (which instance holds a
 * session's environment, when several share the database). None of them imports this file, and
 * the four turn paths (begin, end, stops, recovery) do not import each other: this file wires
 * them, and is the one the api, transport and metrics import.
 *
 * Several instances: PostgreSQL allows one RUNNING turn per workspace (turns_one_running). A
 * BeginTurn whose row insert loses to another instance's turn tears down what it acquired and
 * answers as its on_busy says — REJECT: TURN_IN_PROGRESS naming the running turn; SUPERSEDE:
 * TurnRaceLost, which the api routes to the winner's instance.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { Workspace } from "../sessions/workspace.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import { mapFromPaths } from "./map/from-paths.js";
import type { SessionFacts, WorkspaceRegistry } from "../sessions/registry.js";
import { Acquirer, type ProbeAhead } from "./acquire.js";
import { TurnStarts } from "./begin-turn.js";
import { Capture } from "./capture.js";
import { TurnEnds, type EndTurnResult } from "./end-turn.js";
import { BaseSpares, baseInfo, envPath, probe, reportDeletionFailures, type Environment } from "./environment.js";
import { KnownTurns } from "./idempotency.js";
import type { MapResult } from "./map/index.js";
import type { WorkspaceMapService } from "./map/index.js";
import { EnvironmentOwnership } from "./ownership.js";
import { Pool, type EvictReason, type PoolSettings, type PoolStats, type WsState } from "./pool.js";
import { recoverLeftovers } from "./restart-recovery.js";
import { sessionEndFollower } from "./session-ends.js";
import type * as store from "./store.js";
import { Teardowns } from "./teardown.js";
import { TurnRecords, turnFromRow, type InstanceSettings } from "./turn-records.js";
import { TurnStops } from "./turn-stops.js";
import { compareTurnKeys, turnKey, type BeginResult, type OnBusyName, type StoredTurnKey, type Turn, type TurnExit } from "./turn.js";

export type { BeginResult, OnBusyName, StoredTurnKey, Turn, TurnExit, TurnKey } from "./turn.js";
export { compareTurnKeys, turnKey } from "./turn.js";
export type { EvictReason, PoolSettings, PoolStats, SlotState } from "./pool.js";
export type { InstanceSettings } from "./turn-records.js";
export { LiveCheckStale } from "./turn-records.js";
export { TurnRaceLost, type EnvironmentOwnership, type Placement } from "./ownership.js";
export type { EndTurnResult } from "./end-turn.js";
export { captureWaitMs } from "./turn-stops.js";

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
  private readonly starts: TurnStarts;
  private readonly ends: TurnEnds;
  private readonly stops: TurnStops;
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
    const probeFn = deps.probe ?? ((env: Environment) => probe(env, timeout));
    this.acquirer = new Acquirer({ ...deps, root, pool: this.pool, teardowns: this.teardowns, spares: this.spares, probe: probeFn, track });
    this.ownership = new EnvironmentOwnership({
      records: this.records,
      logger: deps.logger,
      holds: (id) => this.pool.holds(id),
      knows: (id) => this.known.has(id),
      workspaceById: (id) => deps.registry.workspaceById(id),
    });
    const turns = { clock: deps.clock, logger: deps.logger, pool: this.pool, known: this.known, records: this.records, teardowns: this.teardowns };
    this.starts = new TurnStarts({ ...turns, registry: deps.registry, maps: deps.maps, root, acquirer: this.acquirer, probe: probeFn });
    this.ends = new TurnEnds({ ...turns, capture: this.capture });
    this.stops = new TurnStops({ ...turns, shutdownGraceMs: deps.settings.shutdownGraceMs, track });
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
    await recoverLeftovers({ root: this.root, registry: this.deps.registry, logger: this.deps.logger, pool: this.pool, records: this.records, teardowns: this.teardowns });
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
    await this.stops.captureRunning();
    for (const t of this.known.values()) if (t.state === "running") t.abort.abort();
    await Promise.allSettled([...this.pool.all()].map((s) => s.lane));
    await Promise.allSettled([...this.background]);
    await this.spares.close();
  }

  // ---- BeginTurn, EndTurn, CancelTurn (begin-turn.ts, end-turn.ts, turn-stops.ts) ------

  /** The liveness probe of the session's parked environment, started while its session check runs (begin-turn.ts). */
  probeAhead(sessionId: string): ProbeAhead | undefined {
    return this.starts.probeAhead(sessionId);
  }

  /** `facts`: the session was checked on its live object, not read from its row (begin-turn.ts). */
  beginTurn(ws: Workspace, clientTurnId: string | undefined, onBusy: OnBusyName, signal: AbortSignal, ahead?: ProbeAhead, facts?: SessionFacts): Promise<BeginResult> {
    return this.starts.beginTurn(ws, clientTurnId, onBusy, signal, ahead, facts);
  }

  /** `exit`: how the turn's command ended, as the client says (end-turn.ts). */
  endTurn(turnId: string, outcome: store.OutcomeName, exit: TurnExit, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<EndTurnResult> {
    return this.ends.endTurn(turnId, outcome, exit, assertOwner);
  }

  cancelTurn(turnId: string, assertOwner: (sessionId: string) => Promise<Workspace>): Promise<{ cancelled: boolean; settled: boolean }> {
    return this.stops.cancelTurn(turnId, assertOwner);
  }

  // ---- heartbeat, lists ---------------------------------------------------------------

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

  /** The workspace moved to another base commit: its parked environment is torn down (RebaseWorkspace refuses while a turn runs). */
  private rebased(workspaceId: string): void {
    const state = this.pool.get(workspaceId);
    if (!state?.env || state.turn) return;
    this.pool.unseat(state);
    this.track(this.pool.enqueue(state, () => this.teardowns.evictParked(state, "rebased")));
  }

  /** A session ended (stranded, abandoned, destroyed, expired): its running turn stops, its environment is captured and torn down (turn-stops.ts). */
  sessionEnded(workspaceId: string, kind: string): void {
    this.stops.sessionEnded(workspaceId, kind);
  }

  /** Resolves once no live instance has a RUNNING turn of the workspace; CAPTURE_PENDING past the wait (turn-stops.ts). */
  captureSettled(workspaceId: string, callDeadline?: number): Promise<void> {
    return this.stops.captureSettled(workspaceId, callDeadline);
  }

  // ---- plumbing -----------------------------------------------------------------------

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
