/**
 * What this process knows of other incarnations: its `instances` row, and the workspaces of
 * instances that are gone. Kept apart from the GC because the same reconcile runs once before
 * SERVING (startup) and then at every tick (owners that died since), and both must agree.
 */
import { hostname } from "node:os";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { encodePayload } from "../platform/outbox.js";
import type { WorkspaceRegistry } from "./registry.js";
import * as regRepo from "./registry.repository.js";
import * as repo from "./lifecycle.repository.js";
import type { LifecycleContext, LifecycleSettings, ReconcileReport } from "./lifecycle-types.js";
import type { Transitions } from "./transitions.js";

/** How long an instance row outlives its last heartbeat (for the startup reconcile of its previous incarnation). */
const INSTANCE_RETENTION_MS = 24 * 3600_000;

/**
 * The default stable name of an instance: host and gRPC port, so that a restart of the same
 * server recognises its previous incarnation (and strands its sessions at once) while two
 * servers on one host (different ports) do not mistake each other for one.
 */
export function defaultInstanceName(grpcPort: number): string {
  return `${hostname()}:${grpcPort}`;
}

export class Reconciler {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly settings: Required<LifecycleSettings>;

  constructor(
    ctx: LifecycleContext,
    private readonly transitions: Transitions,
    private instanceName: string | undefined,
  ) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
    this.settings = ctx.settings;
  }

  private get db() {
    return this.registry.db;
  }

  private get uow() {
    return this.registry.uow;
  }

  /** The instance heartbeat (every instanceHeartbeatMs while started): heartbeat_at = the database's now(). */
  heartbeat(id: string): Promise<void> {
    return repo.heartbeatInstance(this.db, id);
  }

  /** Marks the instance stopped (graceful stop): its workspaces are orphans at once. */
  stopInstance(id: string): Promise<void> {
    return repo.stopInstance(this.db, id);
  }

  /** Forgets instances silent (by database time) for longer than INSTANCE_RETENTION_MS that own no active workspace. */
  pruneInstances(): Promise<void> {
    return repo.pruneInstances(this.db, INSTANCE_RETENTION_MS);
  }

  /**
   * At start, before SERVING: registers this incarnation and reconciles. Every active workspace
   * whose owner is not a live instance (NULL, a previous incarnation of this instance's name, an
   * instance stopped or silent for 3 heartbeats by the database's clock) is: stranded (reason startup_reconcile) when its
   * changeset is not terminal; destroyed when ephemeral and terminal; adopted (owner = us) when
   * persistent and terminal, as it lives until its expires_at. Set-based: three UPDATEs, each
   * storing its rows' events, in one transaction per share (reconcileOrphans).
   */
  async startup(instanceName?: string): Promise<ReconcileReport> {
    if (instanceName !== undefined) this.instanceName = instanceName;
    const id = this.registry.instanceId;
    if (id === undefined) throw new Error("startup reconcile needs a registry with an instanceId");
    await repo.registerInstance(this.db, id, this.instanceName ?? id);
    const report = await this.reconcileOrphans(true);
    this.logger.info({ ...report, instance: id, instanceName: this.instanceName }, "startup reconcile");
    return report;
  }

  /**
   * Strands/destroys/adopts the orphans (see startup); at a tick only those of dead instances.
   * At startup the orphans are split into `reconcileSlices` disjoint shares, each reconciled in a
   * transaction of its own on its own connection: PostgreSQL runs one statement on one core, and
   * 100,000 non-HOT updates with their events are CPU-bound there. Each share is whole (rows,
   * events, claims released); a share that fails fails the start, and the next start finds its
   * rows still orphaned.
   */
  async reconcileOrphans(atStartup: boolean): Promise<ReconcileReport> {
    const id = this.registry.instanceId!;
    const started = performance.now();
    const now = this.clock.now();
    const scope: repo.OrphanScope = {
      instanceId: id,
      previousName: atStartup ? (this.instanceName ?? id) : undefined,
      includeUnowned: atStartup,
      // Judged in SQL against the database's clock: no application clock on either side.
      staleAfterMs: 3 * this.settings.instanceHeartbeatMs,
    };
    const count = atStartup ? Math.max(1, Math.floor(this.settings.reconcileSlices)) : 1;
    const settled = await Promise.allSettled(
      Array.from({ length: count }, (_, index) => this.reconcileShare(count === 1 ? scope : { ...scope, slice: { index, count } }, atStartup, now)),
    );
    const failed = settled.flatMap((r) => (r.status === "rejected" ? [r.reason as unknown] : []));
    if (failed.length === 1) throw failed[0];
    if (failed.length > 1) throw new AggregateError(failed, `${failed.length} of ${count} reconcile shares failed`);
    const shares = settled.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const adopted = shares.flatMap((s) => s.adopted);
    if (!atStartup) {
      // Adopted at a tick: take them into memory (at startup registry.load() does).
      for (const wid of adopted) {
        const row = await regRepo.findWorkspaceById(this.db, wid);
        if (row?.lifecycle === "active") this.registry.admit(this.registry.workspaceFromRow(row));
      }
    }
    return {
      stranded: shares.reduce((n, s) => n + s.stranded, 0),
      destroyed: shares.reduce((n, s) => n + s.destroyed, 0),
      adopted: adopted.length,
      ms: Math.round(performance.now() - started),
    };
  }

  /** One transaction: the share's orphans stranded, destroyed or adopted, with their events and exit hooks. */
  private reconcileShare(scope: repo.OrphanScope, atStartup: boolean, now: number): Promise<{ stranded: number; destroyed: number; adopted: string[] }> {
    const reason = atStartup ? "startup_reconcile" : "owner_lost";
    const at = new Date(now);
    return this.uow.run(async (change) => {
      const { trx } = change;
      await repo.roomForSetStatements(trx);
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
      await this.transitions.exited(change, stranded, "stranded", reason, now);
      await this.transitions.exited(change, destroyed, "destroyed", "owner_lost", now);
      const adopted = await repo.adoptOrphans(trx, scope);
      return { stranded: stranded.length, destroyed: destroyed.length, adopted };
    });
  }
}
