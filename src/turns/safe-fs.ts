/**
 * File access inside a directory that must never follow a symbolic link out of it: every write
 * materialise makes, every read capture makes (docs/security.md#filesystem-safety). An environment is
 * a directory an agent works in — it can `ln -s /etc out` — and a base commit can hold a link
 * to anywhere; Berth, running as the server's user, must neither write nor read through one.
 *
 * Node has no openat(2), so a path cannot be opened relative to a directory descriptor. Instead:
 * - every parent component is checked with lstat (a link or a non-directory refuses the path;
 *   a missing one is created with mkdir, which never follows a link, and checked again);
 * - the last component is opened with O_NOFOLLOW (a link there fails with ELOOP), and with
 *   O_NONBLOCK for reads (a FIFO must not hang capture);
 * - on Linux, where the opened file really is (readlink of /proc/self/fd/N) is checked to lie
 *   under the directory before a byte is read or written: a parent swapped for a link between
 *   the lstat and the open is caught there. Without /proc the lstat walk is the whole check.
 * What remains for writes (known limit): a parent swapped between the check and the open lets
 * the open create or truncate one file outside before the check sees it; Berth writes only into
 * staging directories no agent has been given (materialise), so no agent can race it there.
 */
import { constants, type Stats } from "node:fs";
import { lstat, mkdir, open, readlink, realpath, unlink, type FileHandle } from "node:fs/promises";
import path from "node:path";

/** Why a path was refused. */
export type UnsafeReason = "SYMLINK_IN_PATH" | "NOT_A_DIRECTORY" | "NOT_A_FILE" | "OUTSIDE_ROOT" | "INVALID_PATH";

export class UnsafePath extends Error {
  constructor(
    readonly rel: string,
    readonly reason: UnsafeReason,
    /** The component (relative to the root) that made it unsafe. */
    readonly component: string,
  ) {
    super(`${rel}: ${reason} at ${component}`);
  }
}

/** A directory the functions below stay inside; `real` is its realpath (the /proc check compares with it). */
export interface Root {
  readonly dir: string;
  readonly real: string;
  /** Parents already checked (private roots only: nobody else can swap them afterwards). */
  readonly checked: Set<string> | undefined;
}

/**
 * `private`: only this process writes under `dir` (a staging directory) — a parent checked once
 * stays checked, so materialising many entries in one directory lstats it once. An environment
 * an agent has been given is never private.
 */
export async function rootOf(dir: string, options: { private?: boolean } = {}): Promise<Root> {
  return { dir, real: await realpath(dir), checked: options.private ? new Set() : undefined };
}

function segmentsOf(rel: string): string[] {
  const segs = rel.split("/");
  if (segs.some((s) => s === "" || s === "." || s === "..")) throw new UnsafePath(rel, "INVALID_PATH", rel);
  return segs;
}

/** lstat, or undefined when nothing is there. */
async function lstatOrNone(p: string): Promise<Stats | undefined> {
  try {
    return await lstat(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/**
 * Checks every parent of `rel` under the root: each must be a real directory, never a link.
 * `create`: a missing one is made (mkdir does not follow links) and checked like the others.
 * Returns false when a parent is missing and `create` is off.
 */
async function checkParents(root: Root, rel: string, segs: readonly string[], create: boolean): Promise<boolean> {
  let abs = root.dir;
  for (let i = 0; i < segs.length - 1; i++) {
    abs = path.join(abs, segs[i]!);
    const component = segs.slice(0, i + 1).join("/");
    if (root.checked?.has(component)) continue;
    let st = await lstatOrNone(abs);
    if (st === undefined) {
      if (!create) return false;
      try {
        await mkdir(abs);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      st = await lstat(abs);
    }
    if (st.isSymbolicLink()) throw new UnsafePath(rel, "SYMLINK_IN_PATH", component);
    if (!st.isDirectory()) throw new UnsafePath(rel, "NOT_A_DIRECTORY", component);
    root.checked?.add(component);
  }
  return true;
}

let procFd: boolean | undefined;

/** The opened file lies under the root (Linux: where /proc/self/fd says it is; elsewhere the lstat walk stands). */
async function checkOpened(root: Root, rel: string, fh: FileHandle): Promise<void> {
  if (procFd === false) return;
  let where: string;
  try {
    where = await readlink(`/proc/self/fd/${fh.fd}`);
    procFd = true;
  } catch (err) {
    if (procFd === undefined && (err as NodeJS.ErrnoException).code === "ENOENT") {
      procFd = false;
      return;
    }
    throw err;
  }
  if (!where.startsWith(root.real + path.sep)) throw new UnsafePath(rel, "OUTSIDE_ROOT", rel);
}

/**
 * Writes `content` to `rel` under the root, creating parent directories, following no link: a
 * link in a parent refuses the path (UnsafePath); a link at `rel` itself is replaced by the file
 * (the link is removed, never written through). Returns the written file's stat.
 */
export async function writeInside(root: Root, rel: string, content: Uint8Array): Promise<Stats> {
  const segs = segmentsOf(rel);
  await checkParents(root, rel, segs, true);
  const abs = path.join(root.dir, ...segs);
  const st = await lstatOrNone(abs);
  if (st?.isSymbolicLink()) await unlink(abs);
  else if (st && !st.isFile()) throw new UnsafePath(rel, "NOT_A_FILE", rel);
  let fh: FileHandle;
  try {
    fh = await open(abs, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o666);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new UnsafePath(rel, "SYMLINK_IN_PATH", rel);
    throw err;
  }
  try {
    await checkOpened(root, rel, fh);
    await fh.writeFile(content);
    return await fh.stat();
  } finally {
    await fh.close();
  }
}

/** Removes `rel` (file, directory tree or link — a link itself, never its target) unless a parent is a link. */
export async function removeInside(root: Root, rel: string, remove: (abs: string) => Promise<void>): Promise<void> {
  const segs = segmentsOf(rel);
  if (!(await checkParents(root, rel, segs, false))) return;
  await remove(path.join(root.dir, ...segs));
  if (root.checked) for (const c of root.checked) if (c === rel || c.startsWith(`${rel}/`)) root.checked.delete(c);
}

/** lstat of `abs`, or undefined when nothing is there (ENOENT, ENOTDIR); any other failure is thrown. */
export async function lstatIfPresent(abs: string): Promise<Stats | undefined> {
  try {
    return await lstat(abs);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw err;
  }
}

/** What readInside found at a path: the file's content, or only its stat when it is over the bound (not read). */
export type ReadInside = { readonly content: Buffer; readonly stats: Stats; readonly tooLarge?: undefined } | { readonly content?: undefined; readonly stats: Stats; readonly tooLarge: true };

/**
 * The content and stat of the regular file at `rel`, read without following a link anywhere on
 * the path; undefined when there is none there now (gone, a link, a FIFO, a socket, a device, a
 * directory, or a path through a link — none of these is a file of the directory). The last
 * component is lstat'ed first, so a special file is never opened (only one swapped in between the
 * lstat and the open is, and O_NONBLOCK keeps a FIFO from blocking even then). At most `maxBytes`
 * are read: a larger file (by fstat, or grown while read) answers `tooLarge` with no content.
 * `accept` may refuse the opened file by its fstat (a file with several names, a file that is not
 * the one an earlier lstat saw): undefined then, nothing read.
 */
export async function readInside(root: Root, rel: string, maxBytes: number, accept?: (st: Stats) => boolean): Promise<ReadInside | undefined> {
  const segs = segmentsOf(rel);
  try {
    if (!(await checkParents(root, rel, segs, false))) return undefined;
  } catch (err) {
    if (err instanceof UnsafePath) return undefined;
    throw err;
  }
  const abs = path.join(root.dir, ...segs);
  const before = await lstatIfPresent(abs);
  if (!before?.isFile()) return undefined;
  let fh: FileHandle;
  try {
    fh = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ELOOP" || code === "ENOTDIR" || code === "ENXIO") return undefined;
    throw err;
  }
  try {
    const stats = await fh.stat();
    if (!stats.isFile() || (accept && !accept(stats))) return undefined;
    try {
      await checkOpened(root, rel, fh);
    } catch (err) {
      if (err instanceof UnsafePath) return undefined;
      throw err;
    }
    if (stats.size > maxBytes) return { stats, tooLarge: true };
    const content = await readUpTo(fh, stats.size, maxBytes);
    return content === undefined ? { stats, tooLarge: true } : { content, stats };
  } finally {
    await fh.close();
  }
}

/**
 * The file's content, at most `maxBytes` (undefined past that): one buffer of the size fstat
 * gave, read to its end; a file still growing is read on in chunks, never past the bound.
 */
async function readUpTo(fh: FileHandle, size: number, maxBytes: number): Promise<Buffer | undefined> {
  const first = Buffer.allocUnsafe(size + 1);
  let total = 0;
  for (;;) {
    const { bytesRead } = await fh.read(first, total, first.length - total, null);
    if (bytesRead === 0) return first.subarray(0, total);
    total += bytesRead;
    if (total > maxBytes) return undefined;
    if (total === first.length) break;
  }
  const chunks = [first];
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(1 << 20, maxBytes + 1 - total));
    const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    total += bytesRead;
    if (total > maxBytes) return undefined;
    chunks.push(chunk.subarray(0, bytesRead));
  }
}
