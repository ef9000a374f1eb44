/**
 * At start: what a previous process left in its environments (a crash, kill -9, a stop that ran
 * out of grace) is captured before the server serves, so that a ResumeSession after a restart
 * reads what the crashed turn had written — and nothing left on disk is deleted unreported.
 *
 * Runs once, from TurnScheduler.start(), each directory in its workspace's lane.
 */
import type { Logger } from "pino";
import { isTerminal } from "../sessions/changeset-states.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { envPath, loadLeftover, moveAside } from "./environment.js";
import type { Pool } from "./pool.js";
import type { CaptureMode, Teardowns } from "./teardown.js";
import type { TurnRecords } from "./turn-records.js";
import { readdir } from "node:fs/promises";

export interface RecoveryDeps {
  readonly root: string;
  readonly registry: WorkspaceRegistry;
  readonly logger: Logger;
  readonly pool: Pool;
  readonly records: TurnRecords;
  readonly teardowns: Teardowns;
}

/**
 * The directories a previous process left under the root are captured against their saved
 * manifests, then torn down — into the overlay as the session is now: stranded (the startup
 * reconcile strands what a dead incarnation owned: "ending" writes) or still active (ordinary
 * writes). A workspace that has ended for good, or whose changeset is terminal, has no overlay to
 * write into: what differs is reported failed (SESSION_ENDED) and the teardown keeps the
 * directory under .unsaved/ with a turn.capture_failed event, by the rule every failed capture
 * follows (teardown.ts). A directory without a matching manifest cannot be diffed: moved to
 * .orphaned/ (kept) and reported as a turn.capture_failed event (NO_MANIFEST); so is one that is
 * no longer the session's latest word: resumed since its turn ran here (SESSION_RESUMED), or a
 * later turn ran on another instance (LATER_TURN_ELSEWHERE). Nothing is deleted unreported.
 */
export async function recoverLeftovers(deps: RecoveryDeps): Promise<void> {
  const { root } = deps;
  let names: string[];
  try {
    names = (await readdir(root, { withFileTypes: true })).filter((d) => d.isDirectory() && !d.name.startsWith(".")).map((d) => d.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  for (const id of names) {
    const ws = UUID.test(id) ? await deps.registry.workspaceById(id) : undefined;
    if (!ws) continue; // not a workspace's: the pre-acquire of a later turn, or an operator, decides
    const state = deps.pool.stateOf(ws);
    if (state.env || state.turn) continue;
    await deps.pool.enqueue(state, async () => {
      const leftover = await loadLeftover(root, id);
      // Captured only while the directory is the session's latest word: its most recent turn
      // ran here (an earlier incarnation of this name), for the session as it is now.
      // Resumed since, or a later turn elsewhere: writing the old files now would overwrite,
      // blindly, what was written meanwhile.
      const last = leftover ? await deps.records.lastTurnOf(id) : undefined;
      const name = deps.records.instanceName;
      const why = !leftover ? "NO_MANIFEST" : !last ? "NO_TURN" : last.session_id !== ws.sessionId ? "SESSION_RESUMED" : name !== undefined && last.instance_name !== name ? "LATER_TURN_ELSEWHERE" : undefined;
      const ranFor = last?.session_id;
      if (why) {
        const aside = await moveAside(root, envPath(root, id), `${id}-${Date.now()}`);
        deps.teardowns.captureFailures++;
        deps.logger.error({ workspaceId: id, movedTo: aside, reason: why }, "turns: a directory left by a previous process cannot be captured; kept under .orphaned/");
        await deps.records.record([deps.records.captureFailedEvent(ws, ranFor ?? ws.sessionId, envPath(root, id), aside ?? "", "server-restart", [{ path: "*", reason: why }], 0)]);
        return;
      }
      if (!leftover) return;
      // Ended for good meanwhile: no overlay to write into, and nobody asked for this directory's
      // edits to go (they were never captured) — kept and reported, as any capture that fails.
      const live = ws.lifecycle === "active" || ws.lifecycle === "stranded";
      const mode: CaptureMode = !live || isTerminal(ws.changeset.state) ? "nowhere" : ws.lifecycle === "stranded" ? "ending" : "capture";
      const r = await deps.teardowns.teardown(state, leftover, "server-restart", ws.sessionId, mode);
      deps.logger.info({ workspaceId: id, mode, captured: r.capturedPaths.length, failed: r.failedPaths.length }, "turns: captured what a previous process left in an environment");
    }).catch((err: unknown) => deps.logger.error({ err, workspaceId: id }, "turns: recovering a directory left by a previous process failed; it stays on disk"));
  }
}

/** A workspace's directory is named by its id; anything else under the root is not ours to recover. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
