/**
 * A workspace map built from a list of file paths instead of a walk: what GetWorkspaceMap answers
 * when the session has no live environment to walk (no turn ran yet, or its environment was
 * evicted). The paths are the workspace's view — the base commit's files with the overlay applied —
 * so the map shows what a turn would see, under the same depth and entry limits as a walk.
 */
import { renderMap } from "./render.js";
import type { MapEntry, WorkspaceMap } from "./types.js";

export interface PathMapLimits {
  readonly maxDepth: number;
  readonly maxEntries: number;
}

/** Tree order as the walk gives it: siblings sorted by name, a directory before its contents. */
function compareTree(a: string, b: string): number {
  const pa = a.split("/");
  const pb = b.split("/");
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (pa[i] !== pb[i]) return pa[i]! < pb[i]! ? -1 : 1;
  }
  return pa.length - pb.length;
}

export function mapFromPaths(root: string, paths: Iterable<string>, limits: PathMapLimits, now: number): WorkspaceMap {
  const dirs = new Set<string>();
  const files = new Set<string>();
  for (const p of paths) {
    const parts = p.split("/");
    // Depth counts components below the root, as the walk does (a file at depth maxDepth is shown).
    for (let i = 1; i < parts.length && i <= limits.maxDepth; i++) dirs.add(parts.slice(0, i).join("/"));
    if (parts.length <= limits.maxDepth) files.add(p);
  }
  const all: MapEntry[] = [...[...dirs].map((path) => ({ path, isDir: true })), ...[...files].map((path) => ({ path, isDir: false }))];
  all.sort((a, b) => compareTree(a.path, b.path));
  const entries = all.slice(0, limits.maxEntries);
  return {
    root,
    entries,
    shown: entries.length,
    total: all.length,
    truncated: all.length > entries.length,
    maxDepth: limits.maxDepth,
    text: renderMap(entries, { total: all.length, maxDepth: limits.maxDepth }),
    builtAt: now,
  };
}
