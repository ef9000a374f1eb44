/**
 * Capture: what an agent wrote into its environment reaches the overlay (docs/turns.md,
 * "Nothing written is lost"). It goes through the overlay's own writeFile/deleteFile, not
 * around them, so a captured edit is claimed, checked and reported like any WriteFile.
 *
 * A path that fails is reported, never dropped, and never retried blindly: what did capture is
 * recorded in the manifest (and is not re-sent), what did not stays different from it. The
 * caller decides what a failure means — EndTurn answers CAPTURE_INCOMPLETE, a teardown keeps
 * the directory under .unsaved/.
 */
import type { Logger } from "pino";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import type { Workspace } from "../sessions/workspace.js";
import { diff, saveManifest, type Environment } from "./environment.js";

export interface CaptureResult {
  readonly captured: string[];
  readonly failed: { path: string; reason: string }[];
}

export interface CaptureDeps {
  readonly root: string;
  readonly overlay: OverlayPort;
  readonly logger: Logger;
  /** Keeps a background promise (the manifest save) until the scheduler stops. */
  readonly track: (p: Promise<unknown>) => void;
}

export class Capture {
  constructor(private readonly deps: CaptureDeps) {}

  /** Captures the directory's changes into the overlay through writeFile/deleteFile (claims, events). */
  async capture(ws: Workspace, env: Environment): Promise<CaptureResult> {
    const d = await diff(env);
    const captured: string[] = [];
    const failed: { path: string; reason: string }[] = [];
    for (const w of d.written) {
      try {
        await this.deps.overlay.writeFile({ workspace: ws, path: w.path, content: w.content });
        env.manifest.set(w.path, w.entry);
        captured.push(w.path);
      } catch (err) {
        failed.push({ path: w.path, reason: reasonOf(err) });
      }
    }
    for (const p of d.deleted) {
      try {
        await this.deps.overlay.deleteFile({ workspace: ws, path: p });
        env.manifest.delete(p);
        captured.push(p);
      } catch (err) {
        if (err instanceof BerthError && err.kind === "not_found") {
          env.manifest.delete(p);
          captured.push(p);
        } else failed.push({ path: p, reason: reasonOf(err) });
      }
    }
    for (const t of d.touched) env.manifest.set(t.path, t.entry);
    if (captured.length > 0 || d.touched.length > 0) {
      this.deps.track(saveManifest(this.deps.root, env).catch((err: unknown) => this.deps.logger.warn({ err }, "turn pool: saving the manifest failed")));
    }
    if (captured.length > 0) this.deps.logger.info({ workspaceId: ws.workspaceId, paths: captured.length, failed: failed.length }, "turn: captured the directory's changes into the overlay");
    return { captured, failed };
  }
}

/** EndTurn's answer when some path could not be captured: the turn stays RUNNING, its directory untouched. */
export function captureIncomplete(turnId: string, r: CaptureResult): BerthError {
  return failedPrecondition(
    "CAPTURE_INCOMPLETE",
    `turn ${turnId}: ${r.failed.length} path(s) could not be captured into the overlay (${r.failed[0]!.reason}); the turn is still running and its environment is kept — resolve and call EndTurn again`,
    { turn_id: turnId, paths: r.failed.map((f) => f.path).join(","), reason: r.failed[0]!.reason, captured: String(r.captured.length) },
  );
}

function reasonOf(err: unknown): string {
  if (err instanceof BerthError) return err.reason;
  return err instanceof Error ? err.message : String(err);
}
