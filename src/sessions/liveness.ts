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

  /**
   * Connected: an AttachSession stream is open here, or the last activity is within the lease.
   * `ws.lastActiveAt` is what this instance knows; the GC brings it forward from the database
   * (activity served by other instances) before it acts on a disconnection.
   */
  isConnected(ws: Workspace, now = this.ctx.clock.now()): boolean {
    return this.ctx.registry.attachedCount(ws.sessionId) > 0 || now - ws.lastActiveAt < this.ctx.settings.leaseMs;
  }

  /**
   * Writes last_active_at of every session touched since the last flush (on this instance,
   * whichever instance owns it), and renews every session an open AttachSession stream or a
   * RUNNING turn here keeps connected; one UPDATE per 1000. This is how the owner's GC, which
   * reads last_active_at before it acts, learns of activity served by other instances.
   */
  async flushActivity(): Promise<number> {
    if (this.flushing) await this.flushing.catch(() => 0);
    const registry = this.ctx.registry;
    const run = (async () => {
      const activity = [...registry.takeActivity()];
      let n = 0;
      for (let i = 0; i < activity.length; i += 1000) {
        const batch = activity.slice(i, i + 1000).map(([id, at]) => [id, new Date(at)] as const);
        try {
          n += await repo.flushLastActive(registry.db, batch);
        } catch (err) {
          // Put them back: the next flush retries (in memory the times are right already).
          for (const [id, at] of activity.slice(i)) registry.markDirty(id, at);
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
