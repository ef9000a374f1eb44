/**
 * The GC loop decides, for thousands of workspaces per tick, which to strand, destroy or keep;
 * its pin-aware rules (the truth table at `collect`) live here, in one place, beside the code
 * that applies them, apart from the explicit transitions it reuses.
 */
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { Logger } from "pino";
import { isTerminal } from "./changeset-states.js";
import type { Clock } from "../platform/clock.js";
import type { Workspace } from "./workspace.js";
import type { WorkspaceRegistry } from "./registry.js";
import * as repo from "./lifecycle.repository.js";
import type { LifecycleContext, LifecycleMetrics, LifecycleSettings, TickReport } from "./lifecycle-types.js";
import type { Liveness } from "./liveness.js";
import type { Reconciler } from "./reconcile.js";
import type { Transitions } from "./transitions.js";

export class GarbageCollector {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly settings: Required<LifecycleSettings>;
  private ticking: Promise<TickReport> | undefined;

  constructor(
    ctx: LifecycleContext,
    private readonly liveness: Liveness,
    private readonly transitions: Transitions,
    private readonly reconciler: Reconciler,
    private readonly metrics: LifecycleMetrics | undefined,
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

  /** The tick in progress, if any (stop() waits for it). */
  get running(): Promise<TickReport> | undefined {
    return this.ticking;
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
      report.flushed = await this.liveness.flushActivity();
    });
    await step("gc_live", () => this.sweepLive(report));
    await step("sweep_stranded", async () => {
      report.abandoned = await this.sweepStranded(this.settings.strandedTtlSeconds * 1000);
    });
    if (this.registry.instanceId !== undefined) {
      await step("strand_orphans", async () => {
        report.orphansStranded = (await this.reconciler.reconcileOrphans(false)).stranded;
      });
      // Every start registers an instance row; rows of instances long gone would otherwise pile up.
      await step("prune_instances", () => this.reconciler.pruneInstances());
    }
    this.metrics?.gcTick((performance.now() - started) / 1000, report);
    const acted = report.expired + report.idle + report.maxLifetime + report.disconnected + report.abandoned + report.orphansStranded;
    if (acted > 0 || report.errors > 0) this.logger.info({ ...report }, "lifecycle GC tick");
    return report;
  }

  /**
   * What GC decides for one live workspace, before the pin lookup. Disconnection applies to
   * ephemeral workspaces (a persistent one lives until its expires_at whether or not its session
   * is connected); what each reason leads to is the truth table of `collect`.
   */
  private classify(ws: Workspace, now: number): "expired" | "disconnected" | "idle" | "max" | undefined {
    if (ws.lifecycle !== "active") return undefined;
    if (ws.mode === "persistent" && ws.expiresAt !== null && now >= ws.expiresAt) return "expired";
    if (ws.mode === "ephemeral" && !this.liveness.isConnected(ws, now)) return "disconnected";
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
   *   expired       *        non-terminal   → stranded ("expired"), resumable
   *   expired       *        terminal       → destroyed (session.expired, gc_expired)
   *   disconnected  *        non-terminal   → stranded ("disconnected")
   *   disconnected  *        terminal       → destroyed (session.destroyed, disconnected)
   *   idle / max    on       non-terminal   → kept (pinned)
   *   idle / max    off      non-terminal   → stranded ("gc_idle" / "gc_max_lifetime"), resumable
   *   idle / max    *        terminal       → destroyed (session.expired, gc_idle / gc_max_lifetime)
   *
   * Pinning off never destroys unfinished work: where the workspace would have been pinned it
   * is stranded (the reference: "flag is off but the workspace would have been pinned:
   * strand"), so its changeset can be recovered by ResumeSession; only terminal work is evicted.
   *
   * Liveness is a fact in the database: the same lookup reads last_active_at, where every
   * instance flushes the activity it served (Heartbeats and other RPCs, open AttachSession
   * streams, running turns), and each candidate is re-classified with the later of that and
   * this instance's memory (which only spares the lookup while it is recent enough). When the
   * lookup fails, that fact is unknown: a disconnected candidate is left for the next tick.
   */
  private async collect(candidates: Workspace[], report: TickReport): Promise<void> {
    const pin = this.settings.pinNonTerminal;
    let facts: Map<string, repo.GcFacts> | undefined;
    try {
      facts = await repo.gcFactsOfWorkspaces(this.db, candidates.map((w) => w.workspaceId));
    } catch (err) {
      this.logger.warn({ err, count: candidates.length }, "GC lookup failed; treating the workspaces as pinned and connected");
    }
    const now = this.clock.now();
    const strand = new Map<string, Workspace[]>();
    const destroy = new Map<string, { kind: "session.destroyed" | "session.expired"; list: Workspace[] }>();
    const add = <T>(m: Map<string, T>, key: string, make: () => T) => m.get(key) ?? (m.set(key, make()), m.get(key)!);
    for (const ws of candidates) {
      const fact = facts?.get(ws.workspaceId);
      // Activity another instance served (or this one flushed): memory catches up with the database.
      if (fact !== undefined && fact.lastActiveAt > ws.lastActiveAt) ws.lastActiveAt = fact.lastActiveAt;
      // Re-classified with the time after the lookup: a heartbeat meanwhile saves it.
      const why = this.classify(ws, now);
      if (why === undefined) continue;
      const state = fact?.state;
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
        const cause = why === "idle" ? "gc_idle" : "gc_max_lifetime";
        if (nonTerminal) add(strand, cause, () => []).push(ws);
        else add(destroy, cause, () => ({ kind: "session.expired" as const, list: [] })).list.push(ws);
      } else if (why === "expired") {
        if (nonTerminal) add(strand, "expired", () => []).push(ws);
        else add(destroy, "gc_expired", () => ({ kind: "session.expired" as const, list: [] })).list.push(ws);
      } else {
        if (facts === undefined) continue; // its last activity elsewhere is unknown: the next tick decides
        if (nonTerminal) add(strand, "disconnected", () => []).push(ws);
        else add(destroy, "disconnected", () => ({ kind: "session.destroyed" as const, list: [] })).list.push(ws);
      }
    }
    // A disconnection holds only while no activity was written since the lookup (checked in SQL).
    const leaseCutoff = now - this.settings.leaseMs;
    for (const [reason, list] of strand) {
      const rows = await this.uow.run((change) => this.transitions.stranded(change, list.map((w) => w.workspaceId), reason, now, reason === "disconnected" ? leaseCutoff : undefined));
      const byId = new Map(list.map((w) => [w.workspaceId, w]));
      for (const r of rows) this.transitions.markStranded(byId.get(r.id)!, now, reason);
      report.stranded += rows.length;
      if (reason === "expired") report.expired += rows.length;
      else if (reason === "gc_idle") report.idle += rows.length;
      else if (reason === "gc_max_lifetime") report.maxLifetime += rows.length;
      else report.disconnected += rows.length;
    }
    for (const [cause, { kind, list }] of destroy) {
      const rows = await this.uow.run((change) => this.transitions.destroyed(change, list.map((w) => w.workspaceId), cause, kind, now, cause === "disconnected" ? leaseCutoff : undefined));
      const byId = new Map(list.map((w) => [w.workspaceId, w]));
      for (const r of rows) this.transitions.markDestroyed(byId.get(r.id)!, cause);
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
        return this.transitions.abandoned(change, rows, reason, "", now);
      });
      this.transitions.applyRejected(out.rejected, out.states);
      total += out.rows.length;
      if (out.rows.length < 500) return total;
      await yieldToLoop();
    }
  }
}
