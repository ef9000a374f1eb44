/**
 * What changed in an environment since its manifest (capture.ts writes it into the overlay):
 * the git path and the walk, the ignore rules and capture_exclude, and every path that is left
 * out and why. Changed files go to the caller's Sink as they are read, at most READ_CONCURRENCY
 * at once; nothing here writes anywhere.
 */
import { lstat, readdir } from "node:fs/promises";
import type { Stats } from "node:fs";
import path from "node:path";
import type { Ignore } from "ignore";
import type { Logger } from "pino";
import { gitBlobId, MARKER, type Environment, type ManifestEntry } from "./environment.js";
import { compileGitignore, isIgnored, RULE_FILE_MAX_BYTES } from "./map/walk-core.mjs";
import type { GitignoreRuleSet } from "./map/walk-core.mjs";
import type { LeftOut, LeftOutReason } from "./turn.js";
import { isGitName } from "../overlay/paths.js";
import { lstatIfPresent, readInside, rootOf } from "./safe-fs.js";
import { gitChanges, gitCannotRead, type GitChanges } from "./env-git.js";

/**
 * Files read (and held, until written into the overlay) at once by one capture: its memory is
 * this many files, not their sum. Two: one is read while the other is written (the overlay takes
 * one workspace's writes one at a time anyway).
 */
const READ_CONCURRENCY = 2;

/** How long git may take to list an environment's changes before capture stops it and walks instead. */
function gitTimeoutMs(manifestSize: number): number {
  return Math.min(120_000, 5_000 + manifestSize);
}

/** Where the collector's findings go as it makes them: a changed file's content is written, then dropped. */
export interface Sink {
  /** Before a file is read: undefined when it may be, else the reason it fails (it is not read). */
  admit(path: string, size: number): Promise<string | undefined>;
  write(path: string, content: Uint8Array, entry: ManifestEntry): Promise<void>;
  fail(path: string, reason: string): void;
}

/** The base commit's files, for a checkout; undefined for an environment of the overlay alone. */
export interface CaptureBase {
  readonly commit: string;
  readonly files: ReadonlyMap<string, { blob: string; size: number }>;
  /** Its submodules (gitlinks): empty directories in the checkout, whose content no overlay path can hold. */
  readonly gitlinks: ReadonlySet<string>;
  /** Its symbolic links: extracted as links, not reported as the agent's. */
  readonly links: ReadonlySet<string>;
}

const NO_BASE: Pick<CaptureBase, "gitlinks" | "links"> = { gitlinks: new Set(), links: new Set() };

/** What a capture found: deletions and touches (written files went to the sink), and what it left out. */
export interface Changes {
  readonly deleted: string[];
  /** Size/mtime changed but the content did not: only the manifest needs the new stat. */
  readonly touched: { path: string; entry: ManifestEntry }[];
  readonly leftOut: LeftOut[];
}

/**
 * What changed in the directory since the manifest, with the ignore rules and the size limit
 * applied; changed files go to the sink as they are read. A checkout asks git (gitChanges):
 * only what git names, plus every path where the manifest and the base disagree (the overlay's
 * own paths, which git would call unchanged once an agent restored the base version), is looked
 * at. Otherwise — no base, the environment's .git gone or unusable, a file git would read that is
 * not a small regular file (gitCannotRead), or git not done within gitTimeoutMs (it blocks on a
 * FIFO .gitignore in a new directory) — the tree is walked, which opens nothing but regular
 * files. Either way a candidate's lstat comes first: anything but a regular file with one name
 * is reported and never opened; a file's content is read only when its size or mtime differ, it
 * is within the limit and the quota admits it, and it is hashed to tell a real change from a touch.
 */
export async function changes(env: Environment, base: CaptureBase | undefined, exclude: Ignore | undefined, maxBytes: number, logger: Logger, sink: Sink): Promise<Changes> {
  let git: GitChanges | undefined;
  const known = base ? dirsOf([base.files.keys(), env.manifest.keys()]) : new Set<string>();
  if (base) {
    const unreadable = await gitCannotRead(env.path, known, RULE_FILE_MAX_BYTES);
    if (unreadable !== undefined) {
      logger.warn({ path: env.path, file: unreadable }, "turn: a file git would read in the environment is not a small regular file; walking the directory instead");
    } else {
      try {
        git = await gitChanges(env.path, base.commit, gitTimeoutMs(env.manifest.size));
        if (!git) logger.warn({ path: env.path }, "turn: the environment's .git is missing or not a directory; walking the directory instead");
      } catch (err) {
        logger.warn({ err, path: env.path }, "turn: git could not list the environment's changes (failed or timed out); walking the directory instead");
      }
    }
  }
  const c = new Collector(env, await rootOf(env.path), exclude, maxBytes, base ?? NO_BASE, base !== undefined, sink);
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
  for (const d of dirsOf([git.untracked, git.changed])) known.add(d);
  await Promise.all([
    ...[...candidates].filter((p) => p !== MARKER && !c.leftOutGit(p)).map((p) => c.file(p, undefined)),
    c.gitDirectoriesIn(known),
    ...[...base.gitlinks].map((g) => c.submodule(g)),
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

/** At most `max` of the functions run() is given run at once; the others wait their turn, in order. */
class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.active < this.max) this.active++;
    else await new Promise<void>((r) => this.waiting.push(r)); // the slot is handed over, still counted
    try {
      return await f();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

/** A `.gitignore` or `.gitattributes`: over RULE_FILE_MAX_BYTES it is left out (`too_large`) and its rules are not applied. */
function isRuleFile(rel: string): boolean {
  const name = rel.slice(rel.lastIndexOf("/") + 1);
  return name === ".gitignore" || name === ".gitattributes";
}

/** Collects one capture's findings (touched, left out, seen; written files go to the sink) for the git and the walk paths alike. */
class Collector {
  readonly touched: Changes["touched"] = [];
  readonly leftOut: LeftOut[] = [];
  private readonly reported = new Set<string>();
  private readonly seen = new Set<string>();
  private readonly done = new Set<string>();
  private readonly excludedDirs = new Map<string, boolean>();
  /** The directories holding a manifest path: descended into even when a rule excludes them. */
  private readonly trackedDirs = new Set<string>();
  private readonly reads = new Limiter(READ_CONCURRENCY);

  constructor(
    private readonly env: Environment,
    private readonly root: Awaited<ReturnType<typeof rootOf>>,
    private readonly exclude: Ignore | undefined,
    private readonly maxBytes: number,
    private readonly base: Pick<CaptureBase, "gitlinks" | "links">,
    /** The top-level .git is Berth's (a checkout): skipped without a word. */
    private readonly ownGit: boolean,
    private readonly sink: Sink,
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
      const rules = await this.rulesIn(dir);
      if (rules) sets.push(rules);
    }
    return sets;
  }

  /**
   * The rules of `dir`'s .gitignore: only a regular file with one name and at most
   * RULE_FILE_MAX_BYTES (safe-fs: no link followed, nothing else opened); any other is reported
   * by file() like every path, and its rules are not applied.
   */
  private async rulesIn(dir: string): Promise<GitignoreRuleSet | undefined> {
    const read = await readInside(this.root, dir ? `${dir}/.gitignore` : ".gitignore", RULE_FILE_MAX_BYTES, (st) => st.nlink === 1);
    return read?.content ? { base: dir, rules: compileGitignore(read.content.toString("utf8")) } : undefined;
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

  /**
   * A submodule's directory (a gitlink of the base) holding anything: its content cannot be
   * overlay files (the path is a commit in the base tree) and git does not look into it, so it is
   * reported once as `dir/` (`submodule`, one of UNSAVED_REASONS) and nothing in it is read.
   */
  async submodule(rel: string): Promise<void> {
    let names: string[];
    try {
      names = await readdir(path.join(this.env.path, rel));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return;
      throw err;
    }
    if (names.length > 0) this.leaveOut(`${rel}/`, "submodule");
  }

  /**
   * One path: lstat first, then by what it is. Symbolic links (not the base's own), FIFOs,
   * sockets and devices are reported and never opened; as before, a manifest path that is no
   * longer a regular file counts as deleted. A regular file with several names is reported
   * (`hardlink`) and not read: another name may be outside the environment — a server file, such
   * as a token — and where the others are cannot be told without a search.
   */
  async file(rel: string, excludedBy: LeftOutReason | undefined): Promise<void> {
    if (this.done.has(rel)) return;
    this.done.add(rel);
    const old = this.env.manifest.get(rel);
    if (excludedBy && !old) {
      this.leaveOut(rel, excludedBy);
      return;
    }
    let st: Stats;
    try {
      st = await lstat(path.join(this.env.path, rel));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return;
      throw err;
    }
    if (st.isDirectory()) return;
    if (st.isSymbolicLink()) {
      if (!this.base.links.has(rel)) this.leaveOut(rel, "symlink");
      return;
    }
    if (!st.isFile()) {
      this.leaveOut(rel, "special_file");
      return;
    }
    this.seen.add(rel);
    if (st.nlink > 1) {
      this.leaveOut(rel, "hardlink");
      return;
    }
    if (old && old.size === st.size && old.mtimeMs === st.mtimeMs) return;
    if (st.size > (isRuleFile(rel) ? Math.min(this.maxBytes, RULE_FILE_MAX_BYTES) : this.maxBytes)) {
      this.leaveOut(rel, "too_large");
      return;
    }
    const refused = await this.sink.admit(rel, st.size);
    if (refused !== undefined) {
      this.sink.fail(rel, refused);
      return;
    }
    await this.reads.run(async () => {
      // Read without following a link anywhere on the path (safe-fs.ts), and only the file the
      // lstat saw, still with one name: one swapped for another since is not read (the next capture sees it).
      const read = await readInside(this.root, rel, this.maxBytes, (o) => o.dev === st.dev && o.ino === st.ino && o.nlink === 1);
      if (read === undefined) return;
      if (read.tooLarge) {
        this.leaveOut(rel, "too_large");
        return;
      }
      const blob = gitBlobId(read.content);
      const entry = { size: read.content.byteLength, mtimeMs: st.mtimeMs, blob };
      if (old && old.blob === blob) this.touched.push({ path: rel, entry });
      else await this.sink.write(rel, read.content, entry);
    });
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
      const rules = await this.rulesIn(rel);
      if (rules) sets = [...sets, rules];
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
      const reason = inheritedReason ?? excludedReason(this.exclude, sets, child, isDir);
      if (isDir && this.base.gitlinks.has(child)) {
        if (!reason) files.push(this.submodule(child));
      } else if (isDir) {
        if (!reason) dirs.push([child, undefined]);
        else {
          if (!inheritedReason) this.leaveOut(`${child}/`, reason);
          if (this.trackedDirs.has(child)) dirs.push([child, reason]);
        }
        // Files, links and special files alike: file() tells them apart by lstat (docs/turns.md).
      } else if (!(inheritedReason && !this.env.manifest.has(child))) files.push(this.file(child, reason));
    }
    await Promise.all(files);
    for (const [d, why] of dirs) await this.walk(d, sets, why);
  }

  /** The findings; `known` are the manifest paths looked at, and those not seen as files are deletions. */
  result(known: readonly string[]): Changes {
    return { touched: this.touched, deleted: known.filter((p) => !this.seen.has(p)), leftOut: this.leftOut };
  }
}

function excludedReason(exclude: Ignore | undefined, sets: readonly GitignoreRuleSet[], rel: string, isDir: boolean): LeftOutReason | undefined {
  if (exclude?.ignores(isDir ? `${rel}/` : rel)) return "excluded";
  if (sets.length > 0 && isIgnored(sets, rel, isDir)) return "gitignored";
  return undefined;
}
