/**
 * The lifecycle's settings, reports and shared context live apart from the facade
 * (lifecycle.ts) so that its parts (liveness, transitions, gc, reconcile) can use them without
 * importing the facade that composes them.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { WorkspaceRegistry } from "./registry.js";

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
  /** How often touched sessions' last_active_at is written (default lease / 8, between 100 ms and 2 s). */
  readonly activityFlushMs?: number;
  /** How often this instance heartbeats its `instances` row (default 5 s); dead after 3 × this. */
  readonly instanceHeartbeatMs?: number;
  /** Workspaces handled per slice of a tick before yielding to the event loop (default 250). */
  readonly chunkSize?: number;
  /**
   * Transactions the startup reconcile runs at once, each over a disjoint share of the orphans
   * (default 1; src/transport/build.ts gives PostgreSQL one per core, at most 4).
   */
  readonly reconcileSlices?: number;
}

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

/** What every part of the lifecycle is given by the facade (settings with their defaults filled in). */
export interface LifecycleContext {
  readonly registry: WorkspaceRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: Required<LifecycleSettings>;
}
