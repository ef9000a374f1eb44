/**
 * What keeps sessions connected, gathered between two activity flushes: calls' activity, open
 * AttachSession streams and whatever else a layer above registers (a RUNNING turn). Any instance
 * may serve any session's RPC, so this is kept by workspace id for sessions live here or not; the
 * lifecycle's flusher takes it all in one batch (LifecycleManager.flushActivity), and the owner's
 * GC reads the result from the database. Kept apart from the registry's live map, which it never
 * needs to read.
 */
import type { Clock } from "../platform/clock.js";
import type { Workspace } from "./workspace.js";

/** What an activity extender answers: the workspaces (by id) whose sessions it keeps connected now. */
export type ActivityExtender = () => Iterable<string>;

export class SessionActivity {
  /**
   * Activity since the last flush (LifecycleManager.flushActivity): workspace id → latest time.
   * By id, not by object, so that sessions this instance does not hold live (another instance's,
   * read from their row by each call) are written too, once per flush.
   */
  private dirty = new Map<string, number>();
  /** Open AttachSession streams per session (connected while it has one), with its workspace. */
  private readonly attached = new Map<string, { workspaceId: string; count: number }>();
  /** What else keeps sessions connected (the turn scheduler: a RUNNING turn); renewed at every flush. */
  private readonly extenders: ActivityExtender[] = [];

  constructor(private readonly clock: Clock) {}

  /**
   * Records activity of a session, live here or not (any instance may serve any session's RPC):
   * in memory at once; the lifecycle's activity flusher writes last_active_at of every touched
   * workspace in one batched UPDATE every few seconds, where the owner's GC reads it.
   */
  touch(ws: Workspace): void {
    const now = this.clock.now();
    ws.lastActiveAt = now;
    if (ws.lifecycle === "active") this.markDirty(ws.workspaceId, now);
  }

  /** Marks a workspace's activity at `at` for the next flush (a failed flush puts its batch back). */
  markDirty(workspaceId: string, at: number): void {
    const had = this.dirty.get(workspaceId);
    if (had === undefined || had < at) this.dirty.set(workspaceId, at);
  }

  /** A workspace no longer live here: its pending activity is not written. */
  forget(workspaceId: string): void {
    this.dirty.delete(workspaceId);
  }

  /**
   * What the next flush writes, taken: every activity since the last call, and the renewal (at
   * `now`) of every session an open AttachSession stream here or an activity extender (a RUNNING
   * turn here) keeps connected. Workspace id → time.
   */
  take(now: number): Map<string, number> {
    const out = this.dirty;
    this.dirty = new Map();
    for (const { workspaceId } of this.attached.values()) out.set(workspaceId, now);
    for (const extend of this.extenders) for (const workspaceId of extend()) out.set(workspaceId, now);
    return out;
  }

  /**
   * Registers something beyond this layer that keeps sessions connected while it lasts (the turn
   * scheduler: a RUNNING turn): the sessions it names are renewed at every activity flush.
   */
  addExtender(extender: ActivityExtender): void {
    this.extenders.push(extender);
  }

  /**
   * Records an open AttachSession stream of a session (live here or not); returns the function
   * that records its close. While it is open the session is connected here, and every activity
   * flush renews its last_active_at, so that its owner (maybe another instance) sees it connected.
   */
  attach(ws: Pick<Workspace, "sessionId" | "workspaceId">): () => void {
    const { sessionId, workspaceId } = ws;
    const entry = this.attached.get(sessionId);
    if (entry) entry.count++;
    else this.attached.set(sessionId, { workspaceId, count: 1 });
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      const e = this.attached.get(sessionId);
      if (e && --e.count <= 0) this.attached.delete(sessionId);
    };
  }

  /** Number of open AttachSession streams of a session on this instance (connected while > 0). */
  attachedCount(sessionId: string): number {
    return this.attached.get(sessionId)?.count ?? 0;
  }
}
