import type { MapEntry } from "./types.js";

export interface RenderInfo {
  readonly total: number;
  readonly maxDepth: number;
}

/**
 * The text block handed to the agent:
 *
 *   Workspace file map (names only, may be slightly stale; depth 3; showing 200 of 1234 entries):
 *   src/
 *     main.ts
 *   README.md
 *
 * Entries must be in tree order with every ancestor present (the walk guarantees both) and
 * already sanitised (no control characters, so one entry is always one line).
 */
export function renderMap(entries: readonly MapEntry[], info: RenderInfo): string {
  const depth = Number.isFinite(info.maxDepth) ? `depth ${info.maxDepth}` : "depth unlimited";
  const count =
    info.total > entries.length ? `showing ${entries.length} of ${info.total} entries` : `${entries.length} ${entries.length === 1 ? "entry" : "entries"}`;
  const lines = [`Workspace file map (names only, may be slightly stale; ${depth}; ${count}):`];
  if (entries.length === 0) lines.push("(empty)");
  for (const e of entries) {
    let level = 0;
    let start = 0;
    for (let i = e.path.indexOf("/"); i !== -1; i = e.path.indexOf("/", i + 1)) {
      level++;
      start = i + 1;
    }
    lines.push("  ".repeat(level) + e.path.slice(start) + (e.isDir ? "/" : ""));
  }
  if (info.total > entries.length) lines.push(`… showing ${entries.length} of ${info.total} entries`);
  return lines.join("\n");
}
