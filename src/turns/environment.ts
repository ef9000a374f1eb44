/**
 * Environments on disk: materialise (git + overlay), the manifest, the directory diff that
 * capture uses, the liveness probe, and identity-checked removal. No pool logic here.
 *
 * This module builds, keeps spare and removes environments, and is the one the rest of the turn
 * layer imports: what an environment is (environment-model.ts), its marker and the probe
 * (environment-marker.ts) and its saved manifest (environment-manifest.ts) are modules of their
 * own, re-exported here. The child processes (tar, rm; git through platform/git.ts) stay here,
 * the one module of this layer allowed to start them (eslint.config.js).
 *
 * Layout under BERTH_ENV_ROOT:
 *   <workspace_id>/            the environment (the agent's working directory): a git checkout (env-git.ts)
 *   <workspace_id>/.berth-env  the marker: this environment's random token (never captured; in .git/info/exclude)
 *   .staging/<token>/          a cold acquire is built here, then renamed into place atomically
 *   .trash/<token>/            a torn-down environment, renamed out of the way, then deleted
 *   .unsaved/<ws>-<token>/     an environment whose changes could not all be captured (kept, never deleted)
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomUUID } from "node:crypto";
import { lstat, mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { spawnGit } from "../platform/git.js";
import { normalisePath } from "../overlay/paths.js";
import { checkoutBase, nameBranch } from "./env-git.js";
import { removeInside, rootOf, UnsafePath, writeInside } from "./safe-fs.js";
import { envPath, type Environment, type Manifest, type TeardownResult } from "./environment-model.js";
import { MARKER, markerSeen, markerToken } from "./environment-marker.js";
import { gitBlobId } from "./environment-manifest.js";

export { envPath, type DirectoryDiff, type Environment, type Manifest, type ManifestEntry, type MarkerSeen, type TeardownResult } from "./environment-model.js";
export { MARKER, markerToken, probe } from "./environment-marker.js";
export { gitBlobId, loadLeftover, saveManifest } from "./environment-manifest.js";

/** A spawned child's exit (rejects with its stderr on a non-zero one) and its stdout; `stdin` is piped into it, or closed. */
function watch(child: ChildProcessWithoutNullStreams, label: string, stdin?: NodeJS.ReadableStream): { done: Promise<Buffer>; stdout: NodeJS.ReadableStream } {
  if (stdin) stdin.pipe(child.stdin);
  else child.stdin.end();
  const errChunks: Buffer[] = [];
  child.stderr.on("data", (c: Buffer) => errChunks.push(c));
  const done = new Promise<Buffer>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.alloc(0));
      else reject(new Error(`${label} exited ${code}: ${Buffer.concat(errChunks).toString().trim().slice(0, 500)}`));
    });
  });
  return { done, stdout: child.stdout };
}

/** A program other than git (tar, rm): git goes through platform/git.ts only. */
function run(cmd: string, args: string[], stdin?: NodeJS.ReadableStream): { done: Promise<Buffer>; stdout: NodeJS.ReadableStream } {
  return watch(spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] }), `${cmd} ${args.slice(0, 3).join(" ")}`, stdin);
}

function git(sourcePath: string, args: string[], config?: Parameters<typeof spawnGit>[2]): { done: Promise<Buffer>; stdout: NodeJS.ReadableStream } {
  return watch(spawnGit(sourcePath, args, config), ["git", ...args.slice(0, 2)].join(" "));
}

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/**
 * What a cold acquire needs to know of a base tree besides its content: path → (blob, size). A
 * commit never changes, so this is computed once per (source, commit) and kept (LRU): a cold
 * acquire of a known commit spawns no ls-tree.
 */
export interface BaseInfo {
  readonly files: ReadonlyMap<string, { blob: string; size: number }>;
  /** Submodules (gitlinks, mode 160000): checked out as empty directories, whose content no overlay path can hold. */
  readonly gitlinks: ReadonlySet<string>;
  /** Committed symbolic links (mode 120000): extracted as links, never files of the manifest. */
  readonly links: ReadonlySet<string>;
}
const BASE_INFO_MAX = 16;
const baseInfos = new Map<string, Promise<BaseInfo>>();

export function baseInfo(sourcePath: string, commit: string): Promise<BaseInfo> {
  const key = `${sourcePath}\u0000${commit}`;
  const hit = baseInfos.get(key);
  if (hit) {
    baseInfos.delete(key);
    baseInfos.set(key, hit);
    return hit;
  }
  const p = lsTree(sourcePath, commit);
  baseInfos.set(key, p);
  // Un-caches a failure (the caller gets the rejection itself).
  p.catch(() => {
    if (baseInfos.get(key) === p) baseInfos.delete(key);
  });
  while (baseInfos.size > BASE_INFO_MAX) baseInfos.delete(baseInfos.keys().next().value!);
  return p;
}

/** path → blob id and size of every regular file at `commit` (`git ls-tree -r -l -z`; links are no files of the manifest), and its gitlinks and links. */
async function lsTree(sourcePath: string, commit: string): Promise<BaseInfo> {
  const p = git(sourcePath, ["ls-tree", "-r", "-l", "-z", "--full-tree", commit]);
  const [out] = await Promise.all([collect(p.stdout), p.done]);
  const files = new Map<string, { blob: string; size: number }>();
  const gitlinks = new Set<string>();
  const links = new Set<string>();
  for (const rec of out.toString("utf8").split("\0")) {
    if (!rec) continue;
    const tab = rec.indexOf("\t");
    const [mode, type, oid, size] = rec.slice(0, tab).split(/ +/);
    const at = rec.slice(tab + 1);
    if (type === "commit") gitlinks.add(at);
    else if (type === "blob" && mode === "120000") links.add(at);
    else if (type === "blob") files.set(at, { blob: oid!, size: Number(size) });
  }
  return { files, gitlinks, links };
}

export interface MaterialiseInput {
  readonly root: string;
  readonly workspaceId: string;
  readonly sourcePath: string | null;
  readonly baseCommit: string;
  /** The branch the checkout is put on (`berth/<changeset_id>`). */
  readonly branch: string;
  /** Overlay entries: content for writes, null for tombstones. */
  readonly entries: readonly { readonly path: string; readonly content: Uint8Array | null }[];
  /** Pre-extracted base trees: one is renamed into staging instead of extracting on the request path. */
  readonly spares?: BaseSpares | undefined;
  /** An overlay entry that could not be applied without following a link (or is refused by the path rules): left out, reported here. */
  readonly onSkipped?: ((path: string, reason: string) => void) | undefined;
}

/** Builds a fresh environment in staging and renames it into place (fails if the path is taken). */
export async function materialise(input: MaterialiseInput): Promise<Environment> {
  const token = randomUUID();
  const staging = path.join(input.root, ".staging", token);
  const target = envPath(input.root, input.workspaceId);
  let base: ReadonlyMap<string, { blob: string; size: number }> = new Map();
  let staged = false;
  let branched: Promise<void> = Promise.resolve();
  try {
    if (input.sourcePath) {
      const info = baseInfo(input.sourcePath, input.baseCommit);
      const spare = await input.spares?.take(input.sourcePath, input.baseCommit, staging);
      staged = spare === true;
      if (!staged) {
        await mkdir(staging, { recursive: true });
        staged = true;
        await Promise.all([info, checkoutBase(input.sourcePath, input.baseCommit, staging, MARKER)]);
      }
      ({ files: base } = await info);
      input.spares?.replenish(input.sourcePath, input.baseCommit);
      // HEAD and one ref: no file of the work tree, so it runs alongside the overlay's writes.
      branched = nameBranch(staging, input.branch, input.baseCommit);
      branched.catch(() => undefined); // awaited below; a failure of the writes must not leave it unhandled
    } else {
      await mkdir(staging, { recursive: true });
      staged = true;
    }
    // Base files: size and blob from git, no stat per file; the mtime is unknown (-1), so a base
    // file git reports changed is hashed before it is taken for a change.
    const manifest: Manifest = new Map();
    for (const [rel, b] of base) manifest.set(rel, { size: b.size, mtimeMs: -1, blob: b.blob });
    // No write follows a link (safe-fs.ts): an entry below a committed link (written before
    // WriteFile refused those) is left out and reported, never written where the link points.
    const root = await rootOf(staging, { private: true });
    for (const e of input.entries) {
      const n = normalisePath("path", e.path);
      if (!n.ok || n.path !== e.path) {
        input.onSkipped?.(e.path, n.ok ? "NOT_NORMALISED" : n.violation.reason);
        continue;
      }
      const rel = n.path;
      if (rel === MARKER) continue;
      try {
        if (e.content === null) {
          await removeInside(root, rel, (abs) => rm(abs, { force: true, recursive: true }));
          manifest.delete(rel);
        } else {
          const st = await writeInside(root, rel, e.content);
          manifest.set(rel, { size: st.size, mtimeMs: st.mtimeMs, blob: gitBlobId(e.content) });
        }
      } catch (err) {
        if (!(err instanceof UnsafePath)) throw err;
        input.onSkipped?.(rel, err.reason);
      }
    }
    const marker = await writeInside(root, MARKER, new TextEncoder().encode(token));
    await branched;
    // Renaming the directory leaves the marker's own ctime as it is.
    await rename(staging, target);
    return { workspaceId: input.workspaceId, path: target, token, manifest, markerSeen: markerSeen(marker) };
  } catch (err) {
    if (staged) void deleteLater(staging);
    throw err;
  }
}

/**
 * Background deletions (torn-down environments, expired spares), one at a time: a burst of
 * teardowns must not turn into parallel `rm -r`s competing with the next acquire for the disk.
 */
let deletions: Promise<void> = Promise.resolve();
/** Where a failed background deletion is reported (the scheduler sets its logger); the queue itself goes on. */
let onDeletionFailed: (dir: string, err: unknown) => void = (dir, err) =>
  process.emitWarning(`berth: could not delete ${dir}: ${err instanceof Error ? err.message : String(err)}`);
export function reportDeletionFailures(report: (dir: string, err: unknown) => void): void {
  onDeletionFailed = report;
}
export function deleteLater(dir: string): Promise<void> {
  const next = deletions.then(() => removeTree(dir)).catch((err: unknown) => onDeletionFailed(dir, err));
  deletions = next;
  return next;
}

/**
 * `rm -rf` in a child process at lower CPU priority: fs.rm would put every unlink on libuv's
 * thread pool, where the request path's own filesystem calls (the liveness probe, a
 * materialise) would queue behind them. Falls back to fs.rm when the spawn fails.
 */
async function removeTree(dir: string): Promise<void> {
  try {
    await run("nice", ["-n", "10", "rm", "-rf", "--", dir]).done;
  } catch {
    await rm(dir, { recursive: true, force: true, maxRetries: 2 });
  }
}

/**
 * Pre-extracted base trees (BERTH_ENV_ROOT/.spares/<token>), per (source, commit): a cold
 * acquire renames one into its staging directory (O(1)) instead of checking the commit out
 * (env-git.ts) on the request path — creating a thousand files is what a cold acquire mostly costs. After a
 * take (or an extraction) the pool is topped up in the background, at most one build per key
 * at a time; a take that finds none ready but one building waits for that build (it started
 * earlier than a fresh extraction would). Bounded: `perKey` spares per key, `maxKeys` keys (LRU;
 * a forgotten key's spares are deleted), and a spare unused for `ttlMs` is deleted by expire().
 * A spare is never handed out twice (taking it is a rename), and a previous process's spares
 * are deleted, never used.
 */
export class BaseSpares {
  private readonly keys = new Map<string, { sourcePath: string; commit: string; ready: { dir: string; at: number }[]; building: Promise<void> | undefined }>();
  /** Every build in flight, a forgotten (LRU-evicted) key's included: close() waits for them all. */
  private readonly builds = new Set<Promise<void>>();
  private readonly dir: string;
  private cleaned: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly root: string,
    private readonly perKey: number,
    private readonly now: () => number,
    private readonly ttlMs = 10 * 60_000,
    private readonly maxKeys = 4,
  ) {
    this.dir = path.join(root, ".spares");
  }

  get enabled(): boolean {
    return this.perKey > 0 && !this.closed;
  }

  private state(sourcePath: string, commit: string) {
    const key = `${sourcePath}\u0000${commit}`;
    let s = this.keys.get(key);
    if (s) {
      this.keys.delete(key);
    } else {
      s = { sourcePath, commit, ready: [], building: undefined };
    }
    this.keys.set(key, s);
    while (this.keys.size > this.maxKeys) {
      const [oldKey, old] = this.keys.entries().next().value!;
      this.keys.delete(oldKey);
      for (const r of old.ready.splice(0)) void deleteLater(r.dir);
    }
    return s;
  }

  /** Renames a ready (or the building) spare of (source, commit) to `to`; false when there is none. */
  async take(sourcePath: string, commit: string, to: string): Promise<boolean> {
    if (!this.enabled) return false;
    const s = this.state(sourcePath, commit);
    if (s.ready.length === 0 && s.building) await s.building;
    for (let r = s.ready.pop(); r; r = s.ready.pop()) {
      try {
        await mkdir(path.dirname(to), { recursive: true });
        await rename(r.dir, to);
        return true;
      } catch {
        void deleteLater(r.dir);
      }
    }
    return false;
  }

  /** Starts building spares of (source, commit) in the background up to perKey. */
  replenish(sourcePath: string, commit: string): void {
    if (!this.enabled) return;
    const s = this.state(sourcePath, commit);
    if (s.building || s.ready.length >= this.perKey) return;
    const build = (async () => {
      try {
        while (!this.closed && s.ready.length < this.perKey && this.keys.get(`${sourcePath}\u0000${commit}`) === s) {
          await (this.cleaned ??= this.clean());
          const dir = path.join(this.dir, randomUUID());
          await mkdir(dir, { recursive: true });
          try {
            // Not niced: a cold acquire may be waiting for this build.
            await checkoutBase(sourcePath, commit, dir, MARKER);
          } catch (err) {
            void deleteLater(dir);
            throw err;
          }
          if (this.closed || this.keys.get(`${sourcePath}\u0000${commit}`) !== s) {
            void deleteLater(dir);
            return;
          }
          s.ready.push({ dir, at: this.now() });
        }
      } catch {
        // A spare is an optimisation: a failed build only means the next acquire extracts itself.
      } finally {
        s.building = undefined;
      }
    })();
    s.building = build;
    this.builds.add(build);
    void build.finally(() => this.builds.delete(build)); // never rejects: its failures are caught inside
  }

  /** Deletes spares unused for ttlMs. */
  expire(): void {
    const cutoff = this.now() - this.ttlMs;
    for (const s of this.keys.values()) {
      const keep = s.ready.filter((r) => r.at > cutoff);
      for (const r of s.ready) if (r.at <= cutoff) void deleteLater(r.dir);
      s.ready = keep;
    }
  }

  /** Stops building; waits for builds in flight. Ready spares stay on disk (the next process deletes them). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled(this.builds);
  }

  /** A previous process's spares: moved out of the way and deleted, never used. */
  private async clean(): Promise<void> {
    const aside = path.join(this.root, ".trash", `spares-${randomUUID()}`);
    try {
      await mkdir(path.dirname(aside), { recursive: true });
      await rename(this.dir, aside);
      void deleteLater(aside);
    } catch {
      // nothing there
    }
  }
}

/**
 * Identity-checked removal: the directory is renamed out of the way only while its marker
 * holds `token` (a materialise renames into place only onto a free path, and acquires of one
 * workspace are serialised, so nothing can replace it between the check and the rename).
 * The rename frees the path at once; the deletion finishes in the background (returned).
 */
export async function removeIfOwned(root: string, dir: string, token: string, preserve: boolean, label = token): Promise<{ outcome: TeardownResult["outcome"]; deleting: Promise<void> }> {
  const current = await markerToken(dir);
  if (current === undefined) {
    const exists = await lstat(dir).then(() => true, () => false);
    return { outcome: exists ? "foreign" : "absent", deleting: Promise.resolve() };
  }
  if (current !== token) return { outcome: "foreign", deleting: Promise.resolve() };
  const aside = path.join(root, preserve ? ".unsaved" : ".trash", label);
  await mkdir(path.dirname(aside), { recursive: true });
  await rename(dir, aside);
  if (preserve) return { outcome: "preserved", deleting: Promise.resolve() };
  return { outcome: "removed", deleting: deleteLater(aside) };
}

/** Moves whatever sits at `dir` aside to `.orphaned` (a directory no pool entry owns: kept, never deleted). */
export async function moveAside(root: string, dir: string, label: string): Promise<string | undefined> {
  const aside = path.join(root, ".orphaned", label);
  await mkdir(path.dirname(aside), { recursive: true });
  try {
    await rename(dir, aside);
    return aside;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

export async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}
