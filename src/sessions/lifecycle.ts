/**
 * The session lifecycle (issue 3; docs/lifecycle.md): liveness, the GC loop, strand, resume,
 * abandon and the startup reconcile. One LifecycleManager per registry.
 *
 * This module is the facade the API, the transports and the tests hold: it fills in the
 * settings' defaults, composes the parts and owns the timers. The behaviour lives in the parts:
 * liveness.ts (connected? the activity flush), transitions.ts (strand, resume, abandon,
 * destroy), gc.ts (the tick, its pin-aware truth table, sweep_stranded), reconcile.ts (instances,
 * the startup and orphan reconcile), lifecycle-events.ts (the events they record). The parts
 * never import this module.
 */
import type { Logger } from "pino";
import type { Workspace } from "./workspace.js";
import type { WorkspaceRegistry } from "./registry.js";
import { GarbageCollector } from "./gc.js";
import type { AbandonCause, LifecycleContext, LifecycleDeps, LifecycleSettings, ReconcileReport, TickReport } from "./lifecycle-types.js";
import { Liveness } from "./liveness.js";
import { Reconciler } from "./reconcile.js";
import { Transitions } from "./transitions.js";
import * as repo from "./lifecycle.repository.js";

export {
  DEFAULT_SETTINGS,
  type AbandonCause,
  type LifecycleDeps,
  type LifecycleMetrics,
  type LifecycleSettings,
  type ReconcileReport,
  type TickReport,
} from "./lifecycle-types.js";
export { defaultInstanceName } from "./reconcile.js";

/**
 * The activity flush's period: activity served by another instance counts once flushed, so the
 * window must stay far below the lease — an eighth of it, at most 2 s (the default 30 s lease),
 * at least 100 ms (a 4 s lease flushes every 500 ms).
 */
export function activityFlushFor(leaseMs: number): number {
  return Math.max(100, Math.min(2000, Math.floor(leaseMs / 8)));
}

export class LifecycleManager {
  private readonly registry: WorkspaceRegistry;
  private readonly logger: Logger;
  readonly settings: Required<LifecycleSettings>;
  private timers: NodeJS.Timeout[] = [];
  private readonly liveness: Liveness;
  private readonly transitions: Transitions;
  private readonly reconciler: Reconciler;
  private readonly gc: GarbageCollector;

  constructor(deps: LifecycleDeps) {
    this.registry = deps.registry;
    this.logger = deps.logger;
    this.settings = {
      activityFlushMs: activityFlushFor(deps.settings.leaseMs),
      instanceHeartbeatMs: 5000,
      chunkSize: 250,
      reconcileSlices: 1,
      ...deps.settings,
    };
    const ctx: LifecycleContext = { registry: deps.registry, clock: deps.clock, logger: deps.logger, settings: this.settings };
    this.liveness = new Liveness(ctx);
    this.transitions = new Transitions(ctx);
    this.reconciler = new Reconciler(ctx, this.transitions, deps.instanceName);
    this.gc = new GarbageCollector(ctx, this.liveness, this.transitions, this.reconciler, deps.metrics);
  }

  /** An instance silent this long (3 missed heartbeats) is dead. */
  get staleAfterMs(): number {
    return 3 * this.settings.instanceHeartbeatMs;
  }

  /** Writes the address other instances forward this instance's turn RPCs to into its instances row. */
  async advertise(address: string): Promise<void> {
    if (this.registry.instanceId === undefined) return;
    await repo.setInstanceAddress(this.registry.db, this.registry.instanceId, address);
  }

  // ---- liveness (liveness.ts) -----------------------------------------------------------

  /** Connected: an AttachSession stream is open, or the last activity is within the lease. */
  isConnected(ws: Workspace, now?: number): boolean {
    return this.liveness.isConnected(ws, now);
  }

  /** Writes last_active_at of every session touched since the last flush; one UPDATE per 1000. */
  flushActivity(): Promise<number> {
    return this.liveness.flushActivity();
  }

  // ---- strand, resume, abandon, destroy (transitions.ts) --------------------------------

  /** Strands an active session (kept for ResumeSession); idempotent. */
  strand(sessionId: string, reason: string): Promise<Workspace> {
    return this.transitions.strand(sessionId, reason);
  }

  /** Resumes a stranded session under a new session id (ALREADY_RESUMED for the losers). */
  resume(deadSessionId: string, agentId: string): Promise<Workspace> {
    return this.transitions.resume(deadSessionId, agentId);
  }

  /** Abandons an active or stranded session, its changeset REJECTED; idempotent. */
  abandon(sessionId: string, cause: AbandonCause, note = "", who?: string): Promise<Workspace> {
    return this.transitions.abandon(sessionId, cause, note, who);
  }

  /** DestroyWorkspace: an active session's workspace ends for good; idempotent. */
  destroy(sessionId: string, cause: string): Promise<Workspace> {
    return this.transitions.destroy(sessionId, cause);
  }

  // ---- the GC loop (gc.ts) --------------------------------------------------------------

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
      every(this.settings.instanceHeartbeatMs, () => this.reconciler.heartbeat(id), "instance heartbeat");
    }
  }

  /** Stops the timers, waits for a running tick, writes pending activity, marks the instance stopped. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.gc.running?.catch(() => undefined);
    await this.flushActivity().catch((err: unknown) => this.logger.warn({ err }, "final activity flush failed"));
    if (this.registry.instanceId !== undefined) {
      await this.reconciler.stopInstance(this.registry.instanceId).catch((err: unknown) =>
        this.logger.warn({ err }, "could not mark the instance stopped"),
      );
    }
  }

  /** One GC pass (see GarbageCollector.tick); ticks never overlap. */
  tick(): Promise<TickReport> {
    return this.gc.tick();
  }

  /** sweep_stranded: abandons (cause auto_ttl) every workspace stranded for longer than ttlMs, 500 per transaction. */
  sweepStranded(ttlMs: number): Promise<number> {
    return this.gc.sweepStranded(ttlMs);
  }

  // ---- instances and reconcile (reconcile.ts) -------------------------------------------

  /** At start, before SERVING: registers this incarnation and reconciles its orphans. */
  /** `instanceName` overrides the deps' (build knows the default, host:bound-port, only once bound). */
  startup(instanceName?: string): Promise<ReconcileReport> {
    return this.reconciler.startup(instanceName);
  }

  /** Strands/destroys/adopts the orphans (see Reconciler.startup); at a tick only those of dead instances. */
  reconcileOrphans(atStartup: boolean): Promise<ReconcileReport> {
    return this.reconciler.reconcileOrphans(atStartup);
  }
}
