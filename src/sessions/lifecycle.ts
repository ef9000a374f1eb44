/**
 * The session lifecycle (issue 3; docs/lifecycle.md): liveness, the GC loop, strand, resume,
 * abandon and the startup reconcile. One LifecycleManager per registry.
 *
 * Liveness. A session is connected while an AttachSession stream is open or its last activity
 * is less than `leaseMs` old. Activity is any RPC naming the session (Heartbeat included) and its
 * creation or resume: a session created (or resumed) and then silent for the lease, never having
 * heartbeated nor attached, is disconnected like one whose heartbeats stopped. Closing an
 * AttachSession stream counts as activity, so the lease runs from the moment it closed.
 *
 * Disconnection applies to ephemeral workspaces (a persistent one lives until its expires_at
 * whether or not its session is connected): changeset terminal → destroyed (cause
 * "disconnected"); non-terminal → stranded (reason "disconnected") when pinning is on, destroyed
 * when it is off (the legacy eviction).
 */
import { hostname } from "node:os";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import { isTerminal } from "./changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { failedPrecondition, notFound, permissionDenied } from "../platform/errors.js";
import type { Workspace } from "./workspace.js";
import type { EventInput } from "../platform/outbox.js";
import { encodePayload } from "../platform/outbox.js";
import { changesetStateEnum } from "../platform/proto-enums.js";
import { assertActive, type WorkspaceRegistry } from "./registry.js";
import * as regRepo from "./registry.repository.js";
import type { ChangesetStateName } from "../platform/schema.js";
import * as repo from "./lifecycle.repository.js";
import type { Change } from "../platform/unit-of-work.js";
import type { ExitLifecycle } from "./session-hooks.js";

export interface LifecycleSettings {
  /** BERTH_SESSION_LEASE_MS */
  readonly leaseMs: number;
  /** BERTH_PIN_NONTERMINAL */
  readonly pinNonTerminal: boolean;
  /** BERTH_GC_INTERVAL_MS */
  readonly gcIntervalMs: number;
  /** BERTH_IDLE_TTL_S */
  readonly idleTtlSeconds: number;
  /** BERTH_MAX_TTL_S */
  readonly maxTtlSeconds: number;
  /** BERTH_STRANDED_TTL_S */
  readonly strandedTtlSeconds: number;
  /** How often touched sessions' last_active_at is written (default 2 s). */
  readonly activityFlushMs?: number;
  /** How often this instance heartbeats its `instances` row (default 5 s); dead after 3 × this. */
  readonly instanceHeartbeatMs?: number;
  /** Workspaces handled per slice of a tick before yielding to the event loop (default 250). */
  readonly chunkSize?: number;
}

/** How long an instance row outlives its last heartbeat (for the startup reconcile of its previous incarnation). */
const INSTANCE_RETENTION_MS = 24 * 3600_000;

export const DEFAULT_SETTINGS: LifecycleSettings = {
  leaseMs: 30_000,
  pinNonTerminal: true,
  gcIntervalMs: 60_000,
  idleTtlSeconds: 3600,
  maxTtlSeconds: 86_400,
  strandedTtlSeconds: 14_400,
};

export type AbandonCause = "auto_ttl" | "explicit" | "admin";

export interface LifecycleDeps {
  readonly registry: WorkspaceRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: LifecycleSettings;
  /** Stable name of this instance across restarts (startup reconcile recognises its previous incarnations). */
  readonly instanceName?: string;
  /** Told about every GC tick (src/metrics/); no-op by default. */
  readonly metrics?: LifecycleMetrics;
}

export interface LifecycleMetrics {
  gcTick(seconds: number, report: TickReport): void;
}

/** What one GC tick did (tests and the log). */
export interface TickReport {
  expired: number;
  idle: number;
  maxLifetime: number;
  disconnected: number;
  stranded: number;
  pinned: number;
  abandoned: number;
  orphansStranded: number;
  flushed: number;
  errors: number;
}

export interface ReconcileReport {
  stranded: number;
  destroyed: number;
  adopted: number;
  ms: number;
}

/** The EventInput of a lifecycle change of a workspace row. */
function eventOf(row: repo.LifecycleRow, kind: string, at: number, reason: string, payload: EventInput["payload"]): EventInput {
  return {
    kind,
    repoId: row.repo_id,
    sessionId: row.session_id,
    workspaceId: row.id,
    agentId: row.agent_id,
    changesetId: row.changeset_id,
    occurredAt: at,
    reason,
    payload,
  };
}

function strandedEvent(row: repo.LifecycleRow, at: number, reason: string): EventInput {
  return eventOf(row, "session.stranded", at, reason, { case: "sessionStranded", value: { strandedAt: timestampFromMs(at) } });
}

function endedEvent(row: repo.LifecycleRow, kind: "session.destroyed" | "session.expired", at: number, cause: string): EventInput {
  return eventOf(row, kind, at, cause, { case: "sessionEnded", value: { cause } });
}

/**
 * The default stable name of an instance: host and gRPC port, so that a restart of the same
 * server recognises its previous incarnation (and strands its sessions at once) while two
 * servers on one host (different ports) do not mistake each other for one.
 */
export function defaultInstanceName(grpcPort: number): string {
  return `${hostname()}:${grpcPort}`;
}

export class LifecycleManager {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  readonly settings: Required<LifecycleSettings>;
  private ticking: Promise<TickReport> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private flushing: Promise<number> | undefined;

  constructor(private readonly deps: LifecycleDeps) {
    this.registry = deps.registry;
    this.clock = deps.clock;
    this.logger = deps.logger;
    this.settings = {
      activityFlushMs: 2000,
      instanceHeartbeatMs: 5000,
      chunkSize: 250,
      ...deps.settings,
    };
  }

  private get db() {
    return this.registry.db;
  }

  /** An instance silent this long (3 missed heartbeats) is dead. */
  get staleAfterMs(): number {
    return 3 * this.settings.instanceHeartbeatMs;
  }

  /** Writes the address other instances forward this instance's turn RPCs to into its instances row. */
  async advertise(address: string): Promise<void> {
    if (this.registry.instanceId === undefined) return;
    await repo.setInstanceAddress(this.db, this.registry.instanceId, address);
  }

  private get uow() {
    return this.registry.uow;
  }

  /** Runs the exit hooks (claims, overlay) for the workspaces a statement of `change` ended. */
  private exited(change: Change, workspaceIds: readonly string[], to: ExitLifecycle, reason: string, at: number): Promise<void> {
    return this.registry.hooks.exited(change, { workspaceIds, to, reason, at });
  }

  // ---- liveness -----------------------------------------------------------------------

  /** Connected: an AttachSession stream is open, or the last activity is within the lease. */
  isConnected(ws: Workspace, now = this.clock.now()): boolean {
    return this.registry.attachedCount(ws.sessionId) > 0 || now - ws.lastActiveAt < this.settings.leaseMs;
  }

  /** Writes last_active_at of every session touched since the last flush; one UPDATE per 1000. */
  async flushActivity(): Promise<number> {
    if (this.flushing) await this.flushing.catch(() => 0);
    const run = (async () => {
      const dirty = this.registry.takeDirty();
      let n = 0;
      for (let i = 0; i < dirty.length; i += 1000) {
        const batch = dirty.slice(i, i + 1000).map((ws) => [ws.workspaceId, new Date(ws.lastActiveAt)] as const);
        try {
          n += await repo.flushLastActive(this.db, batch);
        } catch (err) {
          // Put them back: the next flush retries (in memory the times are right already).
          for (const ws of dirty.slice(i)) this.registry.markDirty(ws);
          throw err;
        }
      }
      return n;
    })();
    this.flushing = run;
    try {
      return await run;
    } finally {
      if (this.flushing === run) this.flushing = undefined;
    }
  }

  // ---- strand, resume, abandon --------------------------------------------------------

  /**
   * Strands an active session: its work is kept for ResumeSession. Idempotent: a stranded
   * session is returned as it is (first stranded_at kept). Abandoned or destroyed: the
   * FAILED_PRECONDITION of assertActive.
   *
   * Claims (issue 5) are released in this same transaction once they exist.
   */
  async strand(sessionId: string, reason: string): Promise<Workspace> {
    const ws = await this.registry.getWorkspace(sessionId);
    if (ws.lifecycle === "stranded") return ws;
    assertActive(ws);
    const now = this.clock.now();
    const rows = await this.uow.run((change) => this.stranded(change, [ws.workspaceId], reason, now));
    if (rows.length === 0) {
      // Lost a race (another strand, an abandon, a destroy): report what it is now.
      this.registry.drop(sessionId);
      const current = await this.registry.getWorkspace(sessionId);
      if (current.lifecycle === "stranded") return current;
      assertActive(current);
      return current;
    }
    this.markStranded(ws, now, reason);
    return ws;
  }

  /**
   * Active → stranded for the given workspaces, in `change`: claims are released (issue 3 defect
   * 5, by the exit hooks); the overlay rows stay for the resume. The rows that changed.
   */
  private async stranded(change: Change, workspaceIds: readonly string[], reason: string, now: number): Promise<repo.LifecycleRow[]> {
    const rows = await repo.strandWorkspaces(change.trx, workspaceIds, reason, new Date(now));
    await this.exited(change, rows.map((r) => r.id), "stranded", reason, now);
    change.record(...rows.map((r) => strandedEvent(r, now, reason)));
    return rows;
  }

  /** Active → destroyed, in `change`: claims and overlay go with it (exit hooks). The rows that changed. */
  private async destroyed(change: Change, workspaceIds: readonly string[], cause: string, kind: "session.destroyed" | "session.expired", now: number): Promise<repo.LifecycleRow[]> {
    const rows = await repo.destroyWorkspaces(change.trx, workspaceIds, cause, new Date(now));
    await this.exited(change, rows.map((r) => r.id), "destroyed", cause, now);
    change.record(...rows.map((r) => endedEvent(r, kind, now, cause)));
    return rows;
  }

  /**
   * DestroyWorkspace: an active session's workspace ends for good. Idempotent: a destroyed
   * session is returned as it is; stranded or abandoned: the FAILED_PRECONDITION of assertActive.
   */
  async destroy(sessionId: string, cause: string): Promise<Workspace> {
    const ws = await this.registry.getWorkspace(sessionId);
    if (ws.lifecycle === "destroyed") return ws;
    assertActive(ws);
    const now = this.clock.now();
    const rows = await this.uow.run((change) => this.destroyed(change, [ws.workspaceId], cause, "session.destroyed", now));
    if (rows.length === 0) {
      // Lost a race (a strand, an abandon, another destroy): report what it is now.
      this.registry.drop(sessionId);
      const current = await this.registry.getWorkspace(sessionId);
      if (current.lifecycle === "destroyed") return current;
      assertActive(current);
      return current;
    }
    this.markDestroyed(ws, cause);
    return ws;
  }

  private markDestroyed(ws: Workspace, cause: string): void {
    this.registry.drop(ws.sessionId);
    ws.lifecycle = "destroyed";
    ws.lifecycleReason = cause;
  }

  private markStranded(ws: Workspace, at: number, reason: string): void {
    this.registry.drop(ws.sessionId);
    ws.lifecycle = "stranded";
    ws.strandedAt = at;
    ws.lifecycleReason = reason;
  }

  /**
   * Resumes a stranded session under a new session id, in one transaction: the compare-and-set
   * of repo.resumeCas, the changeset locked FOR SHARE and re-checked, the redirect dead → new
   * and the event. A loser (a retry or a racing resumer) gets ALREADY_RESUMED with the
   * winner's id in the ErrorInfo metadata (new_session_id), never a session of its own.
   * A caller that is not the session's agent gets PERMISSION_DENIED AGENT_MISMATCH before
   * anything about the session's state is revealed.
   */
  async resume(deadSessionId: string, agentId: string): Promise<Workspace> {
    const now = this.clock.now();
    const fresh = this.registry.mintId();
    const result = await this.uow.run(async ({ trx, record }) => {
        const hit = await repo.resumeCas(trx, deadSessionId, fresh, agentId, this.registry.instanceId ?? null, new Date(now));
        if (!hit) return { ok: false as const };
        const cs = await repo.lockChangesetShared(trx, hit.changeset_id);
        if (!cs || isTerminal(cs.state)) {
          // A transition to a terminal state committed between the CAS and the lock: roll back.
          throw changesetTerminal(hit.changeset_id, cs?.state ?? "closed");
        }
        await repo.insertRedirect(trx, deadSessionId, fresh, hit.id, new Date(now));
        const row = (await regRepo.findWorkspaceById(trx, hit.id))!;
        record({
          kind: "session.resumed",
          repoId: row.repo_id,
          sessionId: fresh,
          workspaceId: row.id,
          agentId,
          changesetId: row.changeset_id,
          occurredAt: now,
          payload: { case: "sessionResumed", value: { oldSessionId: deadSessionId, newSessionId: fresh } },
        });
        return { ok: true as const, row };
    });
    if (!result.ok) throw await this.resumeRefusal(deadSessionId, agentId);
    const ws = this.registry.workspaceFromRow(result.row);
    this.registry.admit(ws);
    return ws;
  }

  /** Why a resume's compare-and-set matched nothing, read after the fact. */
  private async resumeRefusal(dead: string, agentId: string): Promise<Error> {
    const redirect = await regRepo.findRedirect(this.db, dead);
    const row = await regRepo.findWorkspaceBySession(this.db, dead);
    if (!row && !redirect) return notFound("SESSION_NOT_FOUND", `session ${dead} has no workspace`, { session_id: dead });
    const owner = row?.agent_id ?? (redirect ? (await regRepo.findWorkspaceById(this.db, redirect.workspace_id))?.agent_id : undefined);
    if (owner !== undefined && owner !== agentId) {
      return permissionDenied("AGENT_MISMATCH", `session ${dead} belongs to another agent`, { session_id: dead, agent_id: agentId });
    }
    if (redirect) {
      return failedPrecondition("ALREADY_RESUMED", `session ${dead} was already resumed as ${redirect.new_session_id}`, {
        session_id: dead,
        new_session_id: redirect.new_session_id,
        workspace_id: redirect.workspace_id,
      });
    }
    const ws = this.registry.workspaceFromRow(row!);
    if (ws.lifecycle === "stranded") {
      // Stranded and the agent matches: only a terminal changeset stops it.
      return changesetTerminal(ws.changeset.id, ws.changeset.state);
    }
    if (ws.lifecycle === "active") {
      return failedPrecondition("SESSION_NOT_STRANDED", `session ${dead} is active; only a stranded session can be resumed`, {
        session_id: dead,
        workspace_id: ws.workspaceId,
      });
    }
    try {
      assertActive(ws);
    } catch (err) {
      return err as Error;
    }
    return failedPrecondition("SESSION_NOT_STRANDED", `session ${dead} is not stranded`, { session_id: dead });
  }

  /**
   * Abandons an active or stranded session in one transaction: workspace tombstoned
   * (lifecycle abandoned, ended_at), changeset REJECTED with reason session_abandoned:<cause>,
   * events changeset.transitioned and session.abandoned. Idempotent: an abandoned session is
   * returned as it is. Overlay rows and claims (issue 5) are deleted/released in this same
   * transaction once they exist.
   */
  async abandon(sessionId: string, cause: AbandonCause, note = ""): Promise<Workspace> {
    const ws = this.registry.liveWorkspace(sessionId) ?? (await this.registry.getWorkspace(sessionId));
    if (ws.lifecycle === "abandoned") return ws;
    if (ws.lifecycle === "destroyed") assertActive(ws);
    const now = this.clock.now();
    const reason = `session_abandoned:${cause}`;
    const out = await this.uow.run(async (change) => {
      const rows = await repo.abandonSession(change.trx, sessionId, reason, new Date(now));
      if (rows.length === 0) return { rows, rejected: [], states: [] };
      return this.abandoned(change, rows, reason, note, now);
    });
    if (out.rows.length === 0) {
      // Lost a race (resumed, destroyed, abandoned meanwhile): report what it is now.
      this.registry.drop(sessionId);
      const current = await this.registry.getWorkspace(sessionId);
      if (current.lifecycle === "abandoned") return current;
      assertActive(current);
      return current;
    }
    this.applyRejected(out.rejected, out.states);
    this.registry.drop(sessionId);
    ws.lifecycle = "abandoned";
    ws.lifecycleReason = reason;
    const row = await regRepo.findWorkspaceBySession(this.db, sessionId);
    return row ? this.registry.workspaceFromRow(row) : ws;
  }

  /**
   * What follows an abandon (explicit or by the stranded sweep), in its transaction: the exit
   * hooks (overlay rows deleted, claims released), the changesets REJECTED (their move hooks
   * run too) and the events.
   */
  private async abandoned(change: Change, rows: repo.LifecycleRow[], reason: string, note: string, now: number) {
    await this.exited(change, rows.map((r) => r.id), "abandoned", reason, now);
    const ids = [...new Set(rows.map((r) => r.changeset_id))];
    const rejected = await repo.rejectChangesets(change.trx, ids, reason, new Date(now));
    for (const c of rejected) await this.registry.hooks.changesetMoved(change, { changesetId: c.id, to: "rejected", at: now });
    const done = new Set(rejected.map((c) => c.id));
    const states = await repo.changesetStates(change.trx, ids.filter((id) => !done.has(id)));
    const out = { rows, rejected, states };
    change.record(...this.abandonEvents(out, reason, note, now));
    return out;
  }

  private abandonEvents(r: { rows: repo.LifecycleRow[]; rejected: repo.RejectedChangeset[]; states: regRepo.ChangesetRow[] }, reason: string, note: string, now: number): EventInput[] {
    const previous = new Map<string, ChangesetStateName>();
    for (const c of r.states) previous.set(c.id, c.state);
    const events: EventInput[] = [];
    for (const c of r.rejected) {
      previous.set(c.id, c.old_state);
      events.push({
        kind: "changeset.transitioned",
        repoId: c.repo_id,
        changesetId: c.id,
        occurredAt: now,
        reason,
        payload: { case: "changesetTransitioned", value: { fromState: changesetStateEnum(c.old_state), toState: changesetStateEnum("rejected") } },
      });
    }
    for (const row of r.rows) {
      const prev = previous.get(row.changeset_id) ?? "rejected";
      events.push(eventOf(row, "session.abandoned", now, note ? `${reason}: ${note}` : reason, {
        case: "sessionAbandoned",
        value: { previousChangesetState: changesetStateEnum(prev) },
      }));
    }
    return events;
  }

  private applyRejected(rejected: readonly regRepo.ChangesetRow[], states: readonly regRepo.ChangesetRow[]): void {
    for (const c of rejected) this.registry.refreshChangeset(c);
    for (const c of states) this.registry.refreshChangeset(c);
  }

  // ---- the GC loop --------------------------------------------------------------------

  /** Starts the GC loop, the activity flusher and the instance heartbeat. */
  start(): void {
    if (this.timers.length > 0) return;
    const every = (ms: number, fn: () => Promise<unknown>, what: string) => {
      const t = setInterval(() => {
        fn().catch((err: unknown) => this.logger.error({ err }, `${what} failed`));
      }, ms);
      t.unref();
      this.timers.push(t);
    };
    every(this.settings.gcIntervalMs, () => this.tick(), "lifecycle GC tick");
    every(this.settings.activityFlushMs, () => this.flushActivity(), "activity flush");
    if (this.registry.instanceId !== undefined) {
      const id = this.registry.instanceId;
      every(this.settings.instanceHeartbeatMs, () => repo.heartbeatInstance(this.db, id, new Date(this.clock.now())), "instance heartbeat");
    }
  }

  /** Stops the timers, waits for a running tick, writes pending activity, marks the instance stopped. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.ticking?.catch(() => undefined);
    await this.flushActivity().catch((err: unknown) => this.logger.warn({ err }, "final activity flush failed"));
    if (this.registry.instanceId !== undefined) {
      await repo.stopInstance(this.db, this.registry.instanceId, new Date(this.clock.now())).catch((err: unknown) =>
        this.logger.warn({ err }, "could not mark the instance stopped"),
      );
    }
  }

  /**
   * One GC pass: flush activity; over the live workspaces in slices (yielding to the event loop
   * between slices) gc_expired, disconnects and gc_expired_sessions, pin-aware; sweep_stranded;
   * strand the orphans of dead instances. Each step logs its failure and the tick goes on.
   * Ticks never overlap: a tick called while one runs waits for it and returns its report.
   */
  tick(): Promise<TickReport> {
    if (this.ticking) return this.ticking;
    const run = this.runTick().finally(() => {
      this.ticking = undefined;
    });
    this.ticking = run;
    return run;
  }

  private async runTick(): Promise<TickReport> {
    const started = performance.now();
    const report: TickReport = { expired: 0, idle: 0, maxLifetime: 0, disconnected: 0, stranded: 0, pinned: 0, abandoned: 0, orphansStranded: 0, flushed: 0, errors: 0 };
    const step = async (name: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        report.errors++;
        this.logger.error({ err, step: name }, "lifecycle GC step failed; continuing");
      }
    };
    await step("flush_activity", async () => {
      report.flushed = await this.flushActivity();
    });
    await step("gc_live", () => this.sweepLive(report));
    await step("sweep_stranded", async () => {
      report.abandoned = await this.sweepStranded(this.settings.strandedTtlSeconds * 1000);
    });
    if (this.registry.instanceId !== undefined) {
      await step("strand_orphans", async () => {
        report.orphansStranded = (await this.reconcileOrphans(false)).stranded;
      });
      // Every start registers an instance row; rows of instances long gone would otherwise pile up.
      await step("prune_instances", () => repo.pruneInstances(this.db, new Date(this.clock.now() - INSTANCE_RETENTION_MS)));
    }
    this.deps.metrics?.gcTick((performance.now() - started) / 1000, report);
    const acted = report.expired + report.idle + report.maxLifetime + report.disconnected + report.abandoned + report.orphansStranded;
    if (acted > 0 || report.errors > 0) this.logger.info({ ...report }, "lifecycle GC tick");
    return report;
  }

  /** What GC decides for one live workspace, before the pin lookup. */
  private classify(ws: Workspace, now: number): "expired" | "disconnected" | "idle" | "max" | undefined {
    if (ws.lifecycle !== "active") return undefined;
    if (ws.mode === "persistent" && ws.expiresAt !== null && now >= ws.expiresAt) return "expired";
    if (ws.mode === "ephemeral" && !this.isConnected(ws, now)) return "disconnected";
    if (now - ws.lastActiveAt > this.settings.idleTtlSeconds * 1000) return "idle";
    if (now - ws.createdAt > this.settings.maxTtlSeconds * 1000) return "max";
    return undefined;
  }

  private async sweepLive(report: TickReport): Promise<void> {
    const all = [...this.registry.liveWorkspaces()];
    const size = this.settings.chunkSize;
    for (let i = 0; i < all.length; i += size) {
      if (i > 0) await yieldToLoop();
      const now = this.clock.now();
      const candidates: Workspace[] = [];
      const end = Math.min(all.length, i + size);
      for (let j = i; j < end; j++) {
        const ws = all[j]!;
        if (this.classify(ws, now) !== undefined) candidates.push(ws);
      }
      if (candidates.length > 0) await this.collect(candidates, report);
    }
  }

  /**
   * The pin-aware decisions for a slice of candidates (the reference's truth table, with DRAFT
   * non-terminal and a failed lookup counting as pinned):
   *
   *   reason        pinning  changeset      → action
   *   expired       on       non-terminal   → stranded ("expired"), resumable
   *   expired       *        terminal / off → destroyed (session.expired, gc_expired)
   *   disconnected  on       non-terminal   → stranded ("disconnected")
   *   disconnected  *        terminal / off → destroyed (session.destroyed, disconnected)
   *   idle / max    on       non-terminal   → kept (pinned)
   *   idle / max    *        terminal / off → destroyed (session.expired, gc_idle / gc_max_lifetime)
   */
  private async collect(candidates: Workspace[], report: TickReport): Promise<void> {
    const pin = this.settings.pinNonTerminal;
    let states: Map<string, ChangesetStateName> | undefined;
    try {
      states = await repo.changesetStatesOfWorkspaces(this.db, candidates.map((w) => w.workspaceId));
    } catch (err) {
      this.logger.warn({ err, count: candidates.length }, "pin lookup failed; treating the workspaces as pinned");
    }
    const now = this.clock.now();
    const strand = new Map<string, Workspace[]>();
    const destroy = new Map<string, { kind: "session.destroyed" | "session.expired"; list: Workspace[] }>();
    const add = <T>(m: Map<string, T>, key: string, make: () => T) => m.get(key) ?? (m.set(key, make()), m.get(key)!);
    for (const ws of candidates) {
      // Re-classified with the time after the lookup: a heartbeat meanwhile saves it.
      const why = this.classify(ws, now);
      if (why === undefined) continue;
      const state = states?.get(ws.workspaceId);
      // No lookup (failed) or no row: pinned. Flag off: nothing is pinned (legacy).
      const nonTerminal = state === undefined ? true : !isTerminal(state);
      const pinned = pin && nonTerminal;
      const lookupFailed = state === undefined;
      if (why === "idle" || why === "max") {
        if (pinned || (lookupFailed && pin)) {
          report.pinned++;
          continue;
        }
        if (lookupFailed) continue; // flag off but unknown state: leave it for the next tick
        add(destroy, why === "idle" ? "gc_idle" : "gc_max_lifetime", () => ({ kind: "session.expired" as const, list: [] })).list.push(ws);
      } else if (why === "expired") {
        if (pinned) add(strand, "expired", () => []).push(ws);
        else if (!lookupFailed) add(destroy, "gc_expired", () => ({ kind: "session.expired" as const, list: [] })).list.push(ws);
      } else {
        if (pinned) add(strand, "disconnected", () => []).push(ws);
        else if (!lookupFailed) add(destroy, "disconnected", () => ({ kind: "session.destroyed" as const, list: [] })).list.push(ws);
      }
    }
    for (const [reason, list] of strand) {
      const rows = await this.uow.run((change) => this.stranded(change, list.map((w) => w.workspaceId), reason, now));
      const byId = new Map(list.map((w) => [w.workspaceId, w]));
      for (const r of rows) this.markStranded(byId.get(r.id)!, now, reason);
      report.stranded += rows.length;
      if (reason === "expired") report.expired += rows.length;
      else report.disconnected += rows.length;
    }
    for (const [cause, { kind, list }] of destroy) {
      const rows = await this.uow.run((change) => this.destroyed(change, list.map((w) => w.workspaceId), cause, kind, now));
      const byId = new Map(list.map((w) => [w.workspaceId, w]));
      for (const r of rows) this.markDestroyed(byId.get(r.id)!, cause);
      if (cause === "gc_idle") report.idle += rows.length;
      else if (cause === "gc_max_lifetime") report.maxLifetime += rows.length;
      else if (cause === "gc_expired") report.expired += rows.length;
      else report.disconnected += rows.length;
    }
  }

  /** sweep_stranded: abandons (cause auto_ttl) every workspace stranded for longer than ttlMs, 500 per transaction. */
  async sweepStranded(ttlMs: number): Promise<number> {
    const reason = "session_abandoned:auto_ttl";
    let total = 0;
    for (;;) {
      const now = this.clock.now();
      const out = await this.uow.run(async (change) => {
        const rows = await repo.abandonStrandedBefore(change.trx, new Date(now - ttlMs), 500, reason, new Date(now));
        if (rows.length === 0) return { rows, rejected: [], states: [] };
        return this.abandoned(change, rows, reason, "", now);
      });
      this.applyRejected(out.rejected, out.states);
      total += out.rows.length;
      if (out.rows.length < 500) return total;
      await yieldToLoop();
    }
  }

  // ---- instances and reconcile --------------------------------------------------------

  /**
   * At start, before SERVING: registers this incarnation and reconciles. Every active workspace
   * whose owner is not a live instance (NULL, a previous incarnation of this instance's name, an
   * instance stopped or silent for 3 heartbeats) is: stranded (reason startup_reconcile) when its
   * changeset is not terminal; destroyed when ephemeral and terminal; adopted (owner = us) when
   * persistent and terminal, as it lives until its expires_at. Set-based: three UPDATEs, events
   * inserted in batches, all in one transaction.
   */
  async startup(): Promise<ReconcileReport> {
    const id = this.registry.instanceId;
    if (id === undefined) throw new Error("startup reconcile needs a registry with an instanceId");
    await repo.registerInstance(this.db, id, this.deps.instanceName ?? id, new Date(this.clock.now()));
    const report = await this.reconcileOrphans(true);
    this.logger.info({ ...report, instance: id, instanceName: this.deps.instanceName }, "startup reconcile");
    return report;
  }

  /** Strands/destroys/adopts the orphans (see startup); at a tick only those of dead instances. */
  async reconcileOrphans(atStartup: boolean): Promise<ReconcileReport> {
    const id = this.registry.instanceId!;
    const started = performance.now();
    const now = this.clock.now();
    const scope: repo.OrphanScope = {
      instanceId: id,
      previousName: atStartup ? (this.deps.instanceName ?? id) : undefined,
      includeUnowned: atStartup,
      staleBefore: new Date(now - this.staleAfterMs),
    };
    const reason = atStartup ? "startup_reconcile" : "owner_lost";
    const at = new Date(now);
    const out = await this.uow.run(async (change) => {
      const { trx } = change;
      // Each UPDATE stores its rows' events in the same statement (set-based: 100,000 rows, one round trip).
      const stranded = await repo.strandOrphans(trx, scope, {
        kind: "session.stranded",
        at,
        reason,
        payload: encodePayload({ case: "sessionStranded", value: { strandedAt: timestampFromMs(now) } }),
      });
      const destroyed = await repo.destroyOrphans(trx, scope, {
        kind: "session.destroyed",
        at,
        reason: "owner_lost",
        payload: encodePayload({ case: "sessionEnded", value: { cause: "owner_lost" } }),
      });
      if (stranded.length + destroyed.length > 0) change.storedEvents();
      await this.exited(change, stranded, "stranded", reason, now);
      await this.exited(change, destroyed, "destroyed", "owner_lost", now);
      const adopted = await repo.adoptOrphans(trx, scope);
      return { stranded: stranded.length, destroyed: destroyed.length, adopted };
    });
    if (!atStartup) {
      // Adopted at a tick: take them into memory (at startup registry.load() does).
      for (const wid of out.adopted) {
        const row = await regRepo.findWorkspaceById(this.db, wid);
        if (row?.lifecycle === "active") this.registry.admit(this.registry.workspaceFromRow(row));
      }
    }
    return { stranded: out.stranded, destroyed: out.destroyed, adopted: out.adopted.length, ms: Math.round(performance.now() - started) };
  }
}

function changesetTerminal(changesetId: string, state: ChangesetStateName): Error {
  return failedPrecondition("CHANGESET_TERMINAL", `changeset ${changesetId} is ${state.toUpperCase()}, a terminal state`, {
    changeset_id: changesetId,
    state: state.toUpperCase(),
  });
}
