/**
 * DiffWorkspace and DiffChangeset (issue 15): the overlay against its base commit in git's own
 * diff format. The overlay's tree is built in a scratch object store (scratch-git.ts) and
 * compared with the base tree by `git diff-tree`, so renames, binary detection and the patch
 * format are git's and `git apply` takes the result.
 */
import { failedPrecondition } from "../platform/errors.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { Workspace } from "../sessions/workspace.js";
import { comparePaths, type GitBase } from "./git-base.js";
import type { OverlayCache } from "./overlay-cache.js";
import type { OverlayContext } from "./overlay-context.js";
import { ScratchRepo, type DiffStat, type TreeChange } from "./scratch-git.js";

export interface PathDiffInfo extends DiffStat {
  readonly symbols: readonly string[];
}

export interface WorkspaceDiff {
  readonly patch: Uint8Array;
  readonly paths: readonly PathDiffInfo[];
  readonly baseCommit: string;
}

export interface PathConflictInfo {
  readonly path: string;
  readonly sessionIds: readonly string[];
  readonly reason: "DIFFERENT_CONTENT";
}

export interface ChangesetDiff extends WorkspaceDiff {
  readonly conflicts: readonly PathConflictInfo[];
  readonly sessionIds: readonly string[];
}

/** One overlay path as a diff needs it. */
interface Entry {
  readonly content: Uint8Array | null;
  readonly hash: string | null;
  readonly symbols: readonly string[];
}

export function noSource(repoId: string): ReturnType<typeof failedPrecondition> {
  return failedPrecondition("NO_SOURCE_REPOSITORY", `repository ${repoId} was registered without a source_path or a remote_url: there is no git repository to diff or rebase against`, { repo_id: repoId });
}

export class Diffs {
  private readonly registry: WorkspaceRegistry;
  private readonly git: GitBase;
  private readonly cache: OverlayCache;

  constructor(ctx: OverlayContext) {
    this.registry = ctx.registry;
    this.git = ctx.git;
    this.cache = ctx.cache;
  }

  /** The workspace's overlay entries by path (checked against overlay_version: another instance's writes are in it). */
  async entries(ws: Workspace): Promise<Map<string, Entry>> {
    const ov = await this.cache.current(ws);
    const out = new Map<string, Entry>();
    for (const path of [...ov.files.keys()].sort(comparePaths)) {
      const v = await this.cache.view(ws, ov, path);
      if (v) out.set(path, { content: v.content, hash: v.file.hash, symbols: v.file.symbols });
    }
    return out;
  }

  async workspace(ws: Workspace, binary: boolean): Promise<WorkspaceDiff> {
    return this.diffOf(ws.repoId, ws.baseCommit, await this.entries(ws), binary);
  }

  /**
   * Every session of the changeset combined (oldest first). A path two sessions leave different
   * is a conflict; the combined diff shows the first session's version of it. The diff is against
   * the first session's base commit.
   */
  async changeset(workspaces: readonly Workspace[], binary: boolean, repoId: string): Promise<ChangesetDiff> {
    const combined = new Map<string, Entry>();
    const first = new Map<string, { sessionId: string; hash: string | null }>();
    const conflicts = new Map<string, Set<string>>();
    for (const ws of workspaces) {
      for (const [path, e] of await this.entries(ws)) {
        const had = first.get(path);
        if (!had) {
          first.set(path, { sessionId: ws.sessionId, hash: e.hash });
          combined.set(path, e);
          continue;
        }
        const prev = combined.get(path)!;
        combined.set(path, { ...prev, symbols: [...new Set([...prev.symbols, ...e.symbols])] });
        if (had.hash !== e.hash) {
          let s = conflicts.get(path);
          if (!s) conflicts.set(path, (s = new Set([had.sessionId])));
          s.add(ws.sessionId);
        }
      }
    }
    const base = workspaces[0]?.baseCommit;
    const d = base === undefined ? { patch: new Uint8Array(), paths: [], baseCommit: "" } : await this.diffOf(repoId, base, combined, binary);
    return {
      ...d,
      conflicts: [...conflicts].sort(([a], [b]) => comparePaths(a, b)).map(([path, s]) => ({ path, sessionIds: [...s], reason: "DIFFERENT_CONTENT" as const })),
      sessionIds: workspaces.map((w) => w.sessionId),
    };
  }

  private async diffOf(repoId: string, baseCommit: string, entries: ReadonlyMap<string, Entry>, binary: boolean): Promise<WorkspaceDiff> {
    const repo = await this.registry.repository(repoId);
    const gitDir = await this.registry.locations.withCommit(repo, baseCommit);
    if (gitDir === null) throw noSource(repoId);
    const tree = await this.git.tree(gitDir, baseCommit);
    const changes: TreeChange[] = [];
    for (const [path, e] of entries) {
      // A tombstone of a path the base does not have changes nothing.
      if (e.content === null && !tree.blobs.has(path)) continue;
      changes.push({ path, content: e.content });
    }
    if (changes.length === 0) return { patch: new Uint8Array(), paths: [], baseCommit };
    const d = await ScratchRepo.with(gitDir, async (s) => {
      const to = await s.treeOf(baseCommit, changes, tree.executables);
      return s.diff(`${baseCommit}^{tree}`, to, binary);
    });
    return {
      patch: d.patch,
      baseCommit,
      // "" in the rows is the file as a whole (a file with no parsed symbols), not a symbol.
      paths: d.stats.map((st) => ({
        ...st,
        symbols: [...new Set([...(entries.get(st.path)?.symbols ?? []), ...(st.oldPath ? (entries.get(st.oldPath)?.symbols ?? []) : [])])].filter((x) => x !== ""),
      })),
    };
  }
}
