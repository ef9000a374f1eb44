/**
 * DiffWorkspace and DiffChangeset (issue 15): the overlay against its base commit in git's own
 * diff format. The overlay's tree is built in a scratch repository (scratch-git.ts: one
 * fast-import, fed the contents the cache holds and the rest from PostgreSQL in batches) and
 * compared with the base tree by one `git diff-tree`, so renames, binary detection and the
 * patch format are git's and `git apply` takes the result.
 */
import { BerthError, failedPrecondition } from "../platform/errors.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { Workspace } from "../sessions/workspace.js";
import { comparePaths, type GitBase } from "./git-base.js";
import type { OverlayCache } from "./overlay-cache.js";
import type { OverlayContext } from "./overlay-context.js";
import { overlayContents, OverlayRowMoved, type OverlayFileRef } from "./overlay-stream.js";
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

/** One overlay path as a diff needs it: its content when the cache holds it (undefined: read from PostgreSQL when the diff streams it). */
export interface Entry {
  readonly workspaceId: string;
  readonly content: Uint8Array | null | undefined;
  readonly hash: string | null;
  readonly size: number;
  readonly symbols: readonly string[];
}

/** A diff is made again on fresh rows this many times when a row moved while it streamed, then ABORTED OVERLAY_CHANGING. */
const ATTEMPTS = 3;

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

  /**
   * The workspace's overlay entries by path, from the cache (checked against overlay_version:
   * another instance's writes are in it); contents the cache does not hold are left to be read
   * in batches (`contents`, or the diff's stream).
   */
  async entries(ws: Workspace): Promise<Map<string, Entry>> {
    const ov = await this.cache.current(ws);
    const out = new Map<string, Entry>();
    for (const path of [...ov.files.keys()].sort(comparePaths)) {
      const f = ov.files.get(path)!;
      out.set(path, { workspaceId: ws.workspaceId, content: f.content, hash: f.hash, size: f.size ?? 0, symbols: f.symbols });
    }
    return out;
  }

  /** Every entry with its content, the ones the cache lacks read in batches (a rebase merges them all). */
  async contents(ws: Workspace): Promise<Map<string, { content: Uint8Array | null }>> {
    const entries = await this.entries(ws);
    const out = new Map<string, { content: Uint8Array | null }>();
    const missing: OverlayFileRef[] = [];
    for (const [path, e] of entries) {
      if (e.content !== undefined) out.set(path, { content: e.content });
      else if (e.hash !== null) missing.push({ workspaceId: e.workspaceId, path, sha256: e.hash, size: e.size });
    }
    for await (const { ref, content } of overlayContents(this.registry.db, missing)) out.set(ref.path, { content });
    return new Map([...entries.keys()].filter((p) => out.has(p)).map((p) => [p, out.get(p)!]));
  }

  async workspace(ws: Workspace, binary: boolean): Promise<WorkspaceDiff> {
    return this.again(async () => this.diffOf(ws.repoId, ws.baseCommit, await this.entries(ws), binary));
  }

  /** `make` again on fresh entries when a row moved while the diff streamed it. */
  private async again<T>(make: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await make();
      } catch (err) {
        if (!(err instanceof OverlayRowMoved)) throw err;
        if (attempt >= ATTEMPTS) throw new BerthError("aborted", "OVERLAY_CHANGING", `the overlay row of ${err.path} kept changing while it was diffed; retry`, { path: err.path });
      }
    }
  }

  /**
   * Every session of the changeset combined (oldest first). A path two sessions leave different
   * is a conflict; the combined diff shows the first session's version of it. The diff is against
   * the first session's base commit.
   */
  async changeset(workspaces: readonly Workspace[], binary: boolean, repoId: string): Promise<ChangesetDiff> {
    return this.again(() => this.changesetOnce(workspaces, binary, repoId));
  }

  private async changesetOnce(workspaces: readonly Workspace[], binary: boolean, repoId: string): Promise<ChangesetDiff> {
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
    const deleted: string[] = [];
    const cached: TreeChange[] = [];
    const stored: OverlayFileRef[] = [];
    for (const [path, e] of entries) {
      if (e.hash === null) {
        // A tombstone of a path the base does not have changes nothing.
        if (tree.blobs.has(path)) deleted.push(path);
      } else if (e.content) cached.push({ path, content: e.content });
      else stored.push({ workspaceId: e.workspaceId, path, sha256: e.hash, size: e.size });
    }
    if (deleted.length + cached.length + stored.length === 0) return { patch: new Uint8Array(), paths: [], baseCommit };
    const db = this.registry.db;
    // Deletions first (a file may take a deleted directory's place), then the contents: those the cache holds, then the rest as PostgreSQL answers them.
    async function* changes(): AsyncGenerator<TreeChange> {
      for (const path of deleted) yield { path, content: null };
      yield* cached;
      for await (const { ref, content } of overlayContents(db, stored)) yield { path: ref.path, content };
    }
    const d = await ScratchRepo.with(gitDir, async (s) => {
      const to = await s.treeOf(baseCommit, changes(), tree.executables);
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
