/**
 * What happens when a session leaves `active`, or a changeset moves, beyond the sessions layer:
 * the layers above (claims, overlay) register it here, and every path that ends a session
 * (strand, abandon, destroy, GC, reconcile) runs the same hooks inside its own transaction. The
 * sessions layer therefore never imports what it triggers, and no exit path can forget one.
 */
import type { LifecycleName, ChangesetStateName } from "../platform/schema.js";
import type { Change } from "../platform/unit-of-work.js";

export type ExitLifecycle = Exclude<LifecycleName, "active">;

/**
 * The events that end a session, with the lifecycle each ends it in: the one list that followers
 * (registry coherence, overlay caches, the turn scheduler, AttachSession) consult.
 */
const SESSION_ENDING_EVENTS: Readonly<Record<string, ExitLifecycle>> = {
  "session.stranded": "stranded",
  "session.abandoned": "abandoned",
  "session.destroyed": "destroyed",
  "session.expired": "destroyed",
};

export function endedLifecycle(kind: string): ExitLifecycle | undefined {
  return Object.hasOwn(SESSION_ENDING_EVENTS, kind) ? SESSION_ENDING_EVENTS[kind] : undefined;
}

/** Workspaces that have just left `active` in the change's transaction. */
export interface SessionExit {
  readonly workspaceIds: readonly string[];
  readonly to: ExitLifecycle;
  readonly reason: string;
  readonly at: number;
}

export interface ChangesetMove {
  readonly changesetId: string;
  readonly to: ChangesetStateName;
  readonly at: number;
}

export type ExitHook = (change: Change, exit: SessionExit) => Promise<void>;
export type MoveHook = (change: Change, move: ChangesetMove) => Promise<void>;

export class SessionHooks {
  private readonly exitHooks: ExitHook[] = [];
  private readonly moveHooks: MoveHook[] = [];

  onExit(hook: ExitHook): void {
    this.exitHooks.push(hook);
  }

  onChangesetMove(hook: MoveHook): void {
    this.moveHooks.push(hook);
  }

  /** Runs every exit hook, in registration order, inside the change's transaction. */
  async exited(change: Change, exit: SessionExit): Promise<void> {
    if (exit.workspaceIds.length === 0) return;
    for (const hook of this.exitHooks) await hook(change, exit);
  }

  async changesetMoved(change: Change, move: ChangesetMove): Promise<void> {
    for (const hook of this.moveHooks) await hook(change, move);
  }
}
