/**
 * A path of a workspace's view is a file or a directory, never both (issue 26, item 6): a git
 * tree cannot hold both, so a view that did would not be the commit CommitChangeset writes
 * (git's update-index drops the files below a path written as a file). A write that would make
 * a path both is refused, git's way: the agent deletes what is in the way first, which keeps
 * its intent explicit and nothing it wrote is dropped behind its back.
 *
 * Cost: a write looks up the parents of its path (one map lookup each), then the overlay's own
 * files below it through LiveDirs (one step per level), then the base's files below it (a binary
 * search of the base tree's sorted paths, then only the ones this workspace deleted): never a
 * walk of the overlay or of the base tree.
 */
import type { BaseTree } from "./git-base.js";
import { lowerBound } from "./git-base.js";
import type { ShapeConflict } from "./refusals.js";

/**
 * The directories of an overlay's live files (not tombstones): directory → the names in it that
 * are a live file or a directory holding one. Kept by the overlay cache as its rows change.
 */
export type LiveDirs = Map<string, Set<string>>;

/** The overlay's state of a path: null hash for a tombstone. */
interface OverlayFiles {
  get(path: string): { readonly hash: string | null } | undefined;
}

/** `p` became a live file of the overlay. */
export function addLive(dirs: LiveDirs, p: string): void {
  let child = p;
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) {
    const dir = p.slice(0, i);
    let names = dirs.get(dir);
    const known = names !== undefined;
    if (!names) dirs.set(dir, (names = new Set()));
    names.add(child.slice(i + 1));
    // Its parents already lead to it.
    if (known) return;
    child = dir;
  }
}

/** `p` is no longer a live file of the overlay (`live` already says so). */
export function removeLive(dirs: LiveDirs, p: string, live: (path: string) => boolean): void {
  let child = p;
  for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1)) {
    if (dirs.has(child) || live(child)) return;
    const dir = p.slice(0, i);
    const names = dirs.get(dir);
    if (!names) return;
    names.delete(child.slice(i + 1));
    if (names.size > 0) return;
    dirs.delete(dir);
    child = dir;
  }
}

/** A live file of the overlay below directory `p`, if any (one step per level). */
function liveBelow(dirs: LiveDirs, p: string): string | undefined {
  let d = p;
  for (let names = dirs.get(d); names; names = dirs.get(d)) d = `${d}/${names.values().next().value!}`;
  return d === p ? undefined : d;
}

/** Whether `p` is a file of the view: the overlay's row, or (none) the base's file. */
export function isFileInView(p: string, base: BaseTree, files: OverlayFiles): boolean {
  const f = files.get(p);
  return f ? f.hash !== null : base.blobs.has(p);
}

/** Why writing `p` as a file would make a path of the view both a file and a directory, if it would. */
export function shapeConflict(p: string, base: BaseTree, files: OverlayFiles, dirs: LiveDirs): ShapeConflict | undefined {
  // Already a file: the write changes content, not shape.
  if (isFileInView(p, base, files)) return undefined;
  for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) {
    const parent = p.slice(0, i);
    if (isFileInView(parent, base, files)) return { reason: "PATH_UNDER_FILE", conflicting: parent };
  }
  const added = liveBelow(dirs, p);
  if (added !== undefined) return { reason: "PATH_IS_DIRECTORY", conflicting: added };
  // The base's files below, unless this workspace deleted them: only the deleted ones are passed over.
  const prefix = `${p}/`;
  for (let i = lowerBound(base.paths, prefix); i < base.paths.length && base.paths[i]!.startsWith(prefix); i++) {
    const q = base.paths[i]!;
    if (files.get(q)?.hash !== null) return { reason: "PATH_IS_DIRECTORY", conflicting: q };
  }
  return undefined;
}
