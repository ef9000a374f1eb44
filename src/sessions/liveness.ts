/**
 * Liveness is asked of every session on every GC slice and its activity is written far more
 * often than any session changes state; kept apart from the transitions so that the batching of
 * activity writes has one owner.
 */
import type { Workspace } from "./workspace.js";
import * as repo from "./lifecycle.repository.js";
import type { LifecycleContext } from "./lifecycle-types.js";

/**
 * A session is connected while an AttachSession stream is open or its last activity is less
 * than `leaseMs` old. Activity is any RPC naming the session (Heartbeat included) and its
 * creation or resume: a session created (or resumed) and then silent for the lease, never having
 * heartbeated nor attached, is disconnected like one whose heartbeats stopped. Closing an
 * AttachSession stream counts as activity, so the lease runs from the moment it closed.
 */
export class Liveness {
  private flushing: Promise<number> | undefined;

  constructor(private readonly ctx: LifecycleContext) {}

  /** Connected: an AttachSession stream is open, or the last activity is within the lease. */
  isConnected(ws: Workspace, now = this.ctx.clock.now()): boolean {
    return this.ctx.registry.attachedCount(ws.sessionId) > 0 || now - ws.lastActiveAt < this.ctx.settings.leaseMs;
  }

  /** Writes last_active_at of every session touched since the last flush; one UPDATE per 1000. */
  async flushActivity(): Promise<number> {
    if (this.flushing) await this.flushing.catch(() => 0);
    const registry = this.ctx.registry;
    const run = (async () => {
      const dirty = registry.takeDirty();
      let n = 0;
      for (let i = 0; i < dirty.length; i += 1000) {
        const batch = dirty.slice(i, i + 1000).map((ws) => [ws.workspaceId, new Date(ws.lastActiveAt)] as const);
        try {
          n += await repo.flushLastActive(registry.db, batch);
        } catch (err) {
          // Put them back: the next flush retries (in memory the times are right already).
          for (const ws of dirty.slice(i)) registry.markDirty(ws);
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
}
