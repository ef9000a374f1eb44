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
import { lstatIfPresent, readInside, rootOf } from "./safe-fs.js";
import { gitChanges, type GitChanges } from "./env-git.js";

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
  /** The workspace's base files when its environment is a checkout (a repository with a source), else undefined. */
  readonly baseOf: (ws: Workspace) => Promise<CaptureBase | undefined>;
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
    const d = await changes(env, await this.deps.baseOf(ws), exclude.length > 0 ? compileGitignore(exclude.join("\n")) : undefined, this.deps.maxFileBytes, this.deps.logger);
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

/** The base commit's files, for a checkout; undefined for an environment of the overlay alone. */
export interface CaptureBase {
  readonly commit: string;
  readonly files: ReadonlyMap<string, { blob: string; size: number }>;
}

/**
 * What changed in the directory since the manifest, with the ignore rules and the size limit
 * applied. A checkout asks git (gitChanges): only what git names, plus every path where the
 * manifest and the base disagree (the overlay's own paths, which git would call unchanged once
 * an agent restored the base version), is looked at. Otherwise — no base, or the environment's
 * .git gone or unusable — the tree is walked. Either way a candidate's size and mtime (lstat)
 * come first, its content is read only when they differ and it is within the limit, and hashed
 * to tell a real change from a touch.
 */
async function changes(env: Environment, base: CaptureBase | undefined, exclude: Ignore | undefined, maxBytes: number, logger: Logger): Promise<DirectoryDiff & { leftOut: LeftOut[] }> {
  let git: GitChanges | undefined;
  if (base) {
    try {
      git = await gitChanges(env.path, base.commit);
    } catch (err) {
      logger.warn({ err, path: env.path }, "turn: git could not list the environment's changes; walking the directory instead");
    }
    if (!git) logger.warn({ path: env.path }, "turn: the environment's .git is missing or not a directory; walking the directory instead");
  }
  const c = new Collector(env, await rootOf(env.path), exclude, maxBytes, base !== undefined);
  if (!base || !git) {
    await c.walk("", [], undefined);
    return c.result([...env.manifest.keys()]);
  }
  const candidates = new Set<string>(git.changed);
  for (const [p, e] of env.manifest) if (base.files.get(p)?.blob !== e.blob) candidates.add(p);
  for (const p of base.files.keys()) if (!env.manifest.has(p)) candidates.add(p);
  for (const p of git.untracked) {
    if (p.endsWith("/")) {
      // A nested repository, which git does not look into: walked as before (its .git reported).
      if (c.leftOutGit(p)) continue;
      const dir = p.slice(0, -1);
      const ex = c.excludedAbove(p);
      if (ex) c.leaveOut(ex, "excluded");
      await c.walk(dir, await c.rulesAbove(dir), ex ? "excluded" : undefined);
      continue;
    }
    if (env.manifest.has(p)) candidates.add(p);
    else if (!c.leftOutGit(p)) {
      const why = c.excludedAbove(p) ?? (exclude?.ignores(p) ? p : undefined);
      if (why) c.leaveOut(why, "excluded");
      else candidates.add(p);
    }
  }
  for (const p of git.ignored) {
    if (p === MARKER || env.manifest.has(p) || c.leftOutGit(p)) continue;
    c.leaveOut(p, exclude?.ignores(p) || c.excludedAbove(p) ? "excluded" : "gitignored");
  }
  await Promise.all([
    ...[...candidates].filter((p) => p !== MARKER && !c.leftOutGit(p)).map((p) => c.file(p, undefined)),
    c.gitDirectoriesIn(dirsOf([base.files.keys(), env.manifest.keys(), git.untracked, git.changed])),
  ]);
  return c.result([...candidates].filter((p) => env.manifest.has(p)));
}

/** Every directory (not the top) holding one of `paths`. */
function dirsOf(lists: Iterable<string>[]): Set<string> {
  const dirs = new Set<string>();
  for (const list of lists)
    for (const p of list)
      for (let i = p.lastIndexOf("/", p.endsWith("/") ? p.length - 2 : p.length); i > 0; i = p.lastIndexOf("/", i - 1)) {
        const d = p.slice(0, i);
        if (dirs.has(d)) break;
        dirs.add(d);
      }
  return dirs;
}

/** Collects one capture's findings (written, touched, left out, seen) for the git and the walk paths alike. */
class Collector {
  readonly written: DirectoryDiff["written"] = [];
  readonly touched: DirectoryDiff["touched"] = [];
  readonly leftOut: LeftOut[] = [];
  private readonly reported = new Set<string>();
  private readonly seen = new Set<string>();
  private readonly done = new Set<string>();
  private readonly excludedDirs = new Map<string, boolean>();
  /** The directories holding a manifest path: descended into even when a rule excludes them. */
  private readonly trackedDirs = new Set<string>();

  constructor(
    private readonly env: Environment,
    private readonly root: Awaited<ReturnType<typeof rootOf>>,
    private readonly exclude: Ignore | undefined,
    private readonly maxBytes: number,
    /** The top-level .git is Berth's (a checkout): skipped without a word. */
    private readonly ownGit: boolean,
  ) {
    for (const p of env.manifest.keys()) for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) this.trackedDirs.add(p.slice(0, i));
  }

  leaveOut(p: string, reason: LeftOutReason): void {
    if (this.reported.has(p)) return;
    this.reported.add(p);
    this.leftOut.push({ path: p, reason });
  }

  /** A path through a .git in any spelling (paths.ts): its .git reported (`dir/` for a directory), true. */
  leftOutGit(p: string): boolean {
    const parts = p.split("/");
    for (let i = 0; i < parts.length; i++) {
      if (!isGitName(parts[i]!)) continue;
      const isDir = i < parts.length - 1;
      this.leaveOut(parts.slice(0, i + 1).join("/") + (isDir ? "/" : ""), "git_directory");
      return true;
    }
    return false;
  }

  /** The outermost directory above `p` (or `p` itself, written `dir/`) that capture_exclude matches, as `dir/`. */
  excludedAbove(p: string): string | undefined {
    if (!this.exclude) return undefined;
    for (let i = p.indexOf("/"); i > 0; i = p.indexOf("/", i + 1)) {
      const dir = p.slice(0, i + 1);
      let hit = this.excludedDirs.get(dir);
      if (hit === undefined) this.excludedDirs.set(dir, (hit = this.exclude.ignores(dir)));
      if (hit) return dir;
    }
    return undefined;
  }

  /** The .gitignore rule sets that apply at `rel` from the directories above it (a walk started there). */
  async rulesAbove(rel: string): Promise<GitignoreRuleSet[]> {
    const sets: GitignoreRuleSet[] = [];
    const parts = rel.split("/");
    for (let i = 0; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      const text = (await readInside(this.root, dir ? `${dir}/.gitignore` : ".gitignore"))?.content.toString("utf8");
      if (text !== undefined) sets.push({ base: dir, rules: compileGitignore(text) });
    }
    return sets;
  }

  /**
   * A `.git` the agent made in one of `dirs`: git passes over a directory named exactly `.git`
   * without a word unless it is a repository (a nested one git lists, and the walk reports), so
   * each directory git or the base knows is asked with one lstat (not read).
   */
  async gitDirectoriesIn(dirs: Iterable<string>): Promise<void> {
    await Promise.all(
      [...dirs].map(async (d) => {
        const st = await lstatIfPresent(path.join(this.env.path, d, ".git"));
        if (st?.isDirectory()) this.leaveOut(`${d}/.git/`, "git_directory");
        else if (st?.isFile()) this.leaveOut(`${d}/.git`, "git_directory");
      }),
    );
  }

  async file(rel: string, excludedBy: LeftOutReason | undefined): Promise<void> {
    if (this.done.has(rel)) return;
    this.done.add(rel);
    const old = this.env.manifest.get(rel);
    if (excludedBy && !old) {
      this.leaveOut(rel, excludedBy);
      return;
    }
    let st;
    try {
      st = await lstat(path.join(this.env.path, rel));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return;
      throw err;
    }
    if (!st.isFile()) return;
    this.seen.add(rel);
    if (old && old.size === st.size && old.mtimeMs === st.mtimeMs) return;
    if (st.size > this.maxBytes) {
      this.leaveOut(rel, "too_large");
      return;
    }
    // Read without following a link anywhere on the path (safe-fs.ts): a file swapped for a
    // link, a FIFO or a directory since the lstat is no file of the directory.
    const read = await readInside(this.root, rel);
    if (read === undefined) return;
    const content: Uint8Array = read.content;
    if (content.byteLength > this.maxBytes) {
      this.leaveOut(rel, "too_large");
      return;
    }
    const blob = gitBlobId(content);
    const entry = { size: content.byteLength, mtimeMs: st.mtimeMs, blob };
    if (old && old.blob === blob) this.touched.push({ path: rel, entry });
    else this.written.push({ path: rel, content, entry, added: !old });
  }

  /** `inherited`: the directory itself is excluded (descended into only for its manifest paths). */
  async walk(rel: string, sets: readonly GitignoreRuleSet[], inheritedReason: LeftOutReason | undefined): Promise<void> {
    let entries;
    try {
      entries = await readdir(rel ? path.join(this.env.path, rel) : this.env.path, { withFileTypes: true });
    } catch (err) {
      if (rel && (err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    if (!inheritedReason && entries.some((d) => d.name === ".gitignore" && d.isFile())) {
      // Through safe-fs like every read here: a .gitignore that is a link is not read.
      const text = (await readInside(this.root, rel ? `${rel}/.gitignore` : ".gitignore"))?.content.toString("utf8");
      if (text !== undefined) sets = [...sets, { base: rel, rules: compileGitignore(text) }];
    }
    const files: Promise<void>[] = [];
    const dirs: [string, LeftOutReason | undefined][] = [];
    for (const d of entries) {
      if (!rel && d.name === MARKER) continue;
      if (!rel && this.ownGit && d.name === ".git") continue;
      const child = rel ? `${rel}/${d.name}` : d.name;
      // A .git in any spelling (paths.ts) is never the overlay's: reported, never read.
      if (isGitName(d.name)) {
        if (d.isDirectory() || d.isFile()) this.leaveOut(d.isDirectory() ? `${child}/` : child, "git_directory");
        continue;
      }
      const isDir = d.isDirectory();
      // symlinks, sockets, FIFOs: not files of the overlay (docs/turns.md)
      if (!isDir && !d.isFile()) continue;
      const reason = inheritedReason ?? excludedReason(this.exclude, sets, child, isDir);
      if (isDir) {
        if (!reason) dirs.push([child, undefined]);
        else {
          if (!inheritedReason) this.leaveOut(`${child}/`, reason);
          if (this.trackedDirs.has(child)) dirs.push([child, reason]);
        }
      } else if (!(inheritedReason && !this.env.manifest.has(child))) files.push(this.file(child, reason));
    }
    await Promise.all(files);
    for (const [d, why] of dirs) await this.walk(d, sets, why);
  }

  /** The findings; `known` are the manifest paths looked at, and those not seen as files are deletions. */
  result(known: readonly string[]): DirectoryDiff & { leftOut: LeftOut[] } {
    return { written: this.written, touched: this.touched, deleted: known.filter((p) => !this.seen.has(p)), leftOut: this.leftOut };
  }
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
