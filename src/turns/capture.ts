/**
 * Capture: what an agent wrote into its environment reaches the overlay (docs/turns.md,
 * "Nothing written is lost"). It goes through the overlay's own writeFile/deleteFile, not
 * around them, so a captured edit is claimed, checked and reported like any WriteFile.
 *
 * A path that fails is reported, never dropped, and never retried blindly: what did capture is
 * recorded in the manifest (and is not re-sent), what did not stays different from it. The
 * caller decides what a failure means — EndTurn answers CAPTURE_INCOMPLETE, a teardown keeps
 * the directory under .unsaved/ and stores a turn.capture_failed event.
 *
 * What capture leaves out on purpose is reported too (EndTurn's `left_out`): paths the
 * environment's .gitignore files or the repository's capture_exclude list exclude (an
 * `npm install` inside a turn would otherwise become thousands of overlay rows and claims), and
 * files over the overlay's size limit, which are never read (their size is known from lstat).
 * A path the manifest holds (a file of the base or of the overlay) is captured whatever the
 * ignore rules say, as git tracks a tracked file whatever .gitignore says: so a deletion is
 * never inferred from a rule.
 */
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import type { Ignore } from "ignore";
import type { Logger } from "pino";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import type { Workspace } from "../sessions/workspace.js";
import { gitBlobId, MARKER, saveManifest, type DirectoryDiff, type Environment } from "./environment.js";
import { compileGitignore, isIgnored } from "./map/walk-core.mjs";
import type { GitignoreRuleSet } from "./map/walk-core.mjs";
import type { LeftOut, LeftOutReason } from "./turn.js";
import { isGitName } from "../overlay/paths.js";
import { readInside, rootOf } from "./safe-fs.js";

export type { LeftOut, LeftOutReason } from "./turn.js";

export interface CaptureResult {
  readonly captured: string[];
  readonly failed: { path: string; reason: string }[];
  readonly leftOut: LeftOut[];
}

export interface CaptureOptions {
  /** The session has just been stranded: the overlay accepts this capture (WriteInput.ending). */
  readonly ending?: boolean;
}

export interface CaptureDeps {
  readonly root: string;
  readonly overlay: OverlayPort;
  readonly logger: Logger;
  /** Files over this many bytes are left out (`too_large`), never read: the overlay's BERTH_MAX_FILE_BYTES. */
  readonly maxFileBytes: number;
  /** The repository's capture_exclude patterns (gitignore syntax, from the repository root). */
  readonly excludeOf: (ws: Workspace) => Promise<readonly string[]>;
  /** Keeps a background promise (the manifest save) until the scheduler stops. */
  readonly track: (p: Promise<unknown>) => void;
}

/** At most this many left-out entries are reported per capture (the rest are counted in the log). */
const LEFT_OUT_REPORTED = 200;

export class Capture {
  constructor(private readonly deps: CaptureDeps) {}

  /** Captures the directory's changes into the overlay through writeFile/deleteFile (claims, events). */
  async capture(ws: Workspace, env: Environment, options: CaptureOptions = {}): Promise<CaptureResult> {
    const ending = options.ending === true;
    const exclude = await this.deps.excludeOf(ws);
    const d = await changes(env, exclude.length > 0 ? compileGitignore(exclude.join("\n")) : undefined, this.deps.maxFileBytes);
    const captured: string[] = [];
    const failed: { path: string; reason: string }[] = [];
    for (const w of d.written) {
      try {
        await this.deps.overlay.writeFile({ workspace: ws, path: w.path, content: w.content, ...(ending ? { ending } : {}) });
        env.manifest.set(w.path, w.entry);
        captured.push(w.path);
      } catch (err) {
        failed.push({ path: w.path, reason: reasonOf(err) });
      }
    }
    for (const p of d.deleted) {
      try {
        await this.deps.overlay.deleteFile({ workspace: ws, path: p, ...(ending ? { ending } : {}) });
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
    if (captured.length > 0) this.deps.logger.info({ workspaceId: ws.workspaceId, paths: captured.length, failed: failed.length, ending }, "turn: captured the directory's changes into the overlay");
    if (d.leftOut.length > 0) this.deps.logger.info({ workspaceId: ws.workspaceId, leftOut: d.leftOut.length, first: d.leftOut.slice(0, 5) }, "turn: capture left paths out (gitignored, excluded or too large)");
    return { captured, failed, leftOut: d.leftOut.slice(0, LEFT_OUT_REPORTED) };
  }
}

/**
 * What changed in the directory since the manifest, with the ignore rules and the size limit
 * applied: size and mtime (lstat) first, the content read only for a changed file within the
 * limit, hashed to tell a real change from a touch.
 */
async function changes(env: Environment, exclude: Ignore | undefined, maxBytes: number): Promise<DirectoryDiff & { leftOut: LeftOut[] }> {
  const root = await rootOf(env.path);
  const written: DirectoryDiff["written"] = [];
  const touched: DirectoryDiff["touched"] = [];
  const leftOut: LeftOut[] = [];
  const seen = new Set<string>();
  // The directories holding a manifest path: descended into even when a rule excludes them.
  const trackedDirs = new Set<string>();
  for (const p of env.manifest.keys()) for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) trackedDirs.add(p.slice(0, i));

  const file = async (rel: string, excludedBy: LeftOutReason | undefined): Promise<void> => {
    const old = env.manifest.get(rel);
    if (excludedBy && !old) {
      leftOut.push({ path: rel, reason: excludedBy });
      return;
    }
    let st;
    try {
      st = await lstat(path.join(env.path, rel));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    if (!st.isFile()) return;
    seen.add(rel);
    if (old && old.size === st.size && old.mtimeMs === st.mtimeMs) return;
    if (st.size > maxBytes) {
      leftOut.push({ path: rel, reason: "too_large" });
      return;
    }
    // Read without following a link anywhere on the path (safe-fs.ts): a file swapped for a
    // link, a FIFO or a directory since the lstat is no file of the directory.
    const read = await readInside(root, rel);
    if (read === undefined) return;
    const content: Uint8Array = read.content;
    if (content.byteLength > maxBytes) {
      leftOut.push({ path: rel, reason: "too_large" });
      return;
    }
    const blob = gitBlobId(content);
    const entry = { size: content.byteLength, mtimeMs: st.mtimeMs, blob };
    if (old && old.blob === blob) touched.push({ path: rel, entry });
    else written.push({ path: rel, content, entry, added: !old });
  };

  // `inherited`: the directory itself is excluded (descended into only for its manifest paths).
  const walk = async (rel: string, sets: readonly GitignoreRuleSet[], inherited: LeftOutReason | undefined): Promise<void> => {
    let entries;
    try {
      entries = await readdir(rel ? path.join(env.path, rel) : env.path, { withFileTypes: true });
    } catch (err) {
      if (rel && (err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    if (!inherited && entries.some((d) => d.name === ".gitignore" && d.isFile())) {
      // Through safe-fs like every read here: a .gitignore that is a link is not read.
      const text = (await readInside(root, rel ? `${rel}/.gitignore` : ".gitignore"))?.content.toString("utf8");
      if (text !== undefined) sets = [...sets, { base: rel, rules: compileGitignore(text) }];
    }
    const files: Promise<void>[] = [];
    const dirs: [string, LeftOutReason | undefined][] = [];
    for (const d of entries) {
      if (!rel && d.name === MARKER) continue;
      const child = rel ? `${rel}/${d.name}` : d.name;
      // A .git in any spelling (paths.ts) is never the overlay's: reported, never read.
      if (isGitName(d.name)) {
        if (d.isDirectory() || d.isFile()) leftOut.push({ path: d.isDirectory() ? `${child}/` : child, reason: "git_directory" });
        continue;
      }
      const isDir = d.isDirectory();
      // symlinks, sockets, FIFOs: not files of the overlay (docs/turns.md)
      if (!isDir && !d.isFile()) continue;
      const reason = inherited ?? excludedReason(exclude, sets, child, isDir);
      if (isDir) {
        if (!reason) dirs.push([child, undefined]);
        else {
          if (!inherited) leftOut.push({ path: `${child}/`, reason });
          if (trackedDirs.has(child)) dirs.push([child, reason]);
        }
      } else if (!(inherited && !env.manifest.has(child))) files.push(file(child, reason));
    }
    await Promise.all(files);
    for (const [d, why] of dirs) await walk(d, sets, why);
  };
  await walk("", [], undefined);
  const deleted = [...env.manifest.keys()].filter((p) => !seen.has(p));
  return { written, deleted, touched, leftOut };
}

function excludedReason(exclude: Ignore | undefined, sets: readonly GitignoreRuleSet[], rel: string, isDir: boolean): LeftOutReason | undefined {
  if (exclude?.ignores(isDir ? `${rel}/` : rel)) return "excluded";
  if (sets.length > 0 && isIgnored(sets, rel, isDir)) return "gitignored";
  return undefined;
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
