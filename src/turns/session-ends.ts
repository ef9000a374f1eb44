/**
 * How the scheduler learns that a session ended: it follows every committed change through
 * the unit of work (this instance's at commit, other instances' through the commit feed), so
 * a strand answered anywhere stops the running turn here. After missed events it asks the
 * database about every workspace it holds state for: a missed end would leave a running turn
 * and its environment behind.
 */
import type { CommitFollower } from "../platform/unit-of-work.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { endedLifecycle } from "../sessions/session-hooks.js";

export function sessionEndFollower(
  registry: WorkspaceRegistry,
  held: () => Iterable<string>,
  ended: (workspaceId: string, kind: string) => void,
): CommitFollower {
  return {
    apply(e) {
      if (e.workspaceId && endedLifecycle(e.kind)) ended(e.workspaceId, e.kind);
    },
    async resync() {
      const ids = [...held()];
      if (ids.length === 0) return;
      const lifecycles = await registry.lifecyclesOf(ids);
      for (const id of ids) {
        const lifecycle = lifecycles.get(id);
        if (lifecycle !== "active") ended(id, `session.${lifecycle ?? "destroyed"}`);
      }
    },
  };
}
