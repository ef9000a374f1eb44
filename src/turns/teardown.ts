/**
 * Teardown of an environment: capture first, then identity-checked removal.
 *
 * Why each part:
 *  - one promise per Environment: a supersede, a cancel and an expiry can all ask for the same
 *    teardown; it runs once and every asker waits for the same result;
 *  - identity-checked: the directory is removed only while its marker holds this environment's
 *    token, so tearing down a displaced environment cannot remove its replacement;
 *  - capture before removal, and nothing deleted that could not be captured: such a directory
 *    is moved under .unsaved/ for an operator, the path is still freed for the next turn, and
 *    the loss is stored as a turn.capture_failed event (paths, reasons, where it is kept) and
 *    counted (berth_turn_capture_failures_total) — never only a log line;
 *  - what capture left out but could not store (CaptureResult.unsaved: a submodule's content, a
 *    file with several names) counts as not captured: the directory is kept the same way, the
 *    event names those paths with their reason (SUBMODULE, HARDLINK);
 *  - how the capture writes: as any WriteFile ("capture"); as the capture of a session that
 *    has just been stranded ("ending": the overlay accepts it for the stranded workspace, so
 *    ResumeSession restores it); not at all ("discard": the session was destroyed or
 *    abandoned under a running turn, its overlay deleted in the same transaction, the end
 *    asked for while the directory was live — there is nothing to write into); or not at all
 *    but said ("nowhere": the session ended for good while a previous process's directory
 *    waited for the restart — whatever differs is reported failed, SESSION_ENDED, so the
 *    directory is kept like any other that could not be captured).
 * Every teardown and eviction is counted, logged and stored as an env.evicted event.
 */
import path from "node:path";
import type { Logger } from "pino";
import type { Workspace } from "../sessions/workspace.js";
import type { CaptureOptions, CaptureResult } from "./capture.js";
import { removeIfOwned, type Environment, type TeardownResult } from "./environment.js";
import type { EvictReason, Pool, WsState } from "./pool.js";
import type { TurnRecords } from "./turn-records.js";

export interface TeardownDeps {
  readonly root: string;
  readonly logger: Logger;
  readonly pool: Pool;
  readonly records: TurnRecords;
  readonly capture: (ws: Workspace, env: Environment, options: CaptureOptions) => Promise<CaptureResult>;
  /** Keeps a background promise (a deletion, an event insert) until the scheduler stops. */
  readonly track: (p: Promise<unknown>) => void;
}

/** How a teardown's capture writes (see the header). */
export type CaptureMode = "capture" | "ending" | "discard" | "nowhere";

/** The reason a "nowhere" teardown gives each path that differs. */
export const SESSION_ENDED = "SESSION_ENDED";

export class Teardowns {
  /** Teardowns whose capture could not complete (the directory kept under .unsaved/). */
  captureFailures = 0;

  constructor(private readonly deps: TeardownDeps) {}

  /** A parked environment's eviction (capacity, expiry, session end), unless a turn took it meanwhile. */
  async evictParked(state: WsState, reason: EvictReason, mode: CaptureMode = "capture"): Promise<void> {
    if (state.turn || !state.env) return;
    await this.teardown(state, state.env, reason, state.ws.sessionId, mode);
  }

  /**
   * Capture, then identity-checked removal. Idempotent per Environment. When some change could
   * not be captured the directory is kept under .unsaved/ (never deleted) and the paths logged.
   */
  teardown(state: WsState, env: Environment, reason: EvictReason, sessionId: string, mode: CaptureMode = "capture"): Promise<TeardownResult> {
    if (state.env === env) state.env = undefined;
    if (env.teardown) return env.teardown;
    env.teardown = (async (): Promise<TeardownResult> => {
      let captured: string[] = [];
      let failed: { path: string; reason: string }[] = [];
      let gone = false;
      if (mode !== "discard") {
        try {
          const r = await this.deps.capture(state.ws, env, { ending: mode === "ending", ...(mode === "nowhere" ? { nowhere: SESSION_ENDED } : {}) });
          captured = r.captured;
          failed = [...r.failed, ...r.unsaved.map((u) => ({ path: u.path, reason: u.reason.toUpperCase() }))];
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOENT") gone = true;
          else failed = [{ path: "*", reason: err instanceof Error ? err.message : String(err) }];
        }
      }
      const preserve = failed.length > 0;
      const label = preserve ? `${env.workspaceId}-${env.token}` : env.token;
      const { outcome, deleting } = gone ? { outcome: "absent" as const, deleting: Promise.resolve() } : await removeIfOwned(this.deps.root, env.path, env.token, preserve, label);
      this.deps.track(deleting);
      if (preserve) {
        this.captureFailures++;
        const keptAt = outcome === "preserved" ? path.join(this.deps.root, ".unsaved", label) : "";
        this.deps.logger.error({ path: env.path, keptAt, reason, failed }, "turn pool: changes could not be captured into the overlay; the environment is kept under .unsaved/");
        await this.deps.records.record([this.deps.records.captureFailedEvent(state.ws, sessionId, env.path, keptAt, reason, failed, captured.length)]);
      }
      if (outcome === "foreign") this.deps.logger.warn({ path: env.path, token: env.token, reason }, "turn pool: teardown skipped: the directory belongs to another environment");
      this.countEviction(reason, state, env.path, sessionId, { outcome, captured: captured.length });
      // No turn after it here: other instances stop forwarding the session's turns to this one
      // (docs/turns.md, "Several instances"). In the lane, before any later turn's row.
      if (!state.turn && !state.env) {
        await this.deps.records.releaseEnvironment(state.workspaceId).catch((err: unknown) => this.deps.logger.warn({ err, workspaceId: state.workspaceId }, "turns: recording the environment's release failed"));
      }
      return { outcome, capturedPaths: captured, failedPaths: failed.map((f) => f.path) };
    })();
    return env.teardown;
  }

  countEviction(reason: EvictReason, state: WsState, dir: string, sessionId: string, extra: Record<string, unknown>): void {
    this.deps.pool.countEviction(reason);
    this.deps.logger.info({ reason, path: dir, workspaceId: state.workspaceId, ...extra }, `turn pool: evict reason=${reason}`);
    this.deps.track(this.deps.records.record([this.deps.records.evictedEvent(state.ws, sessionId, dir, reason)]));
  }
}
