/**
 * Reads (ReadFile, ListFiles) merge the overlay over the base commit and take no lock, claim nor
 * transaction; apart from the write path, neither has to be read to understand the other. Both
 * answer from the cache once it is checked against the workspace's overlay_version (one
 * primary-key lookup: another instance's writes are in it). A ReadFile is remembered in the
 * cache, and in PostgreSQL (overlay_reads) when another session had touched the path: it is what
 * STALE_OVERLAY compares a later write against, on any instance. ListFiles' modified_by_other
 * and the read's "touched by another" come from the modifiers index, its entries of the paths
 * concerned checked against PostgreSQL first (one query).
 */
import type { Clock } from "../platform/clock.js";
import type { Workspace } from "../sessions/workspace.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { comparePaths, lowerBound, type GitBase } from "./git-base.js";
import type { ModifiersIndex } from "./modifiers-index.js";
import type { OverlayCache } from "./overlay-cache.js";
import type { OverlayContext } from "./overlay-context.js";
import { fileDeleted, fileNotFound } from "./refusals.js";
import * as sqlRepo from "./overlay.repository.js";

export interface ReadResult {
  readonly content: Uint8Array;
  readonly hash: string;
  readonly source: "overlay" | "base";
}

export interface ListedFile {
  readonly path: string;
  readonly source: "overlay" | "base";
  readonly change: "added" | "modified" | "deleted" | undefined;
  readonly modifiedByOther: boolean;
}

export class FileReads {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly git: GitBase;
  private readonly index: ModifiersIndex;
  private readonly cache: OverlayCache;

  constructor(ctx: OverlayContext) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
    this.git = ctx.git;
    this.index = ctx.index;
    this.cache = ctx.cache;
  }

  async readFile(ws: Workspace, path: string): Promise<ReadResult> {
    const now = this.clock.now();
    // Checked against the workspace's overlay_version: another instance's acknowledged write is in it.
    const ov = await this.cache.current(ws);
    (ov.reads ??= new Map()).set(path, now);
    // The read is shared with every instance only where it can matter to STALE_OVERLAY: when
    // another session has touched the path (checked against PostgreSQL). If nobody has, any
    // competing change is after this read, which could never excuse it.
    const [v] = await Promise.all([this.cache.view(ws, ov, path), this.shareRead(ws, path, now)]);
    if (v) {
      if (v.content === null || v.file.hash === null) throw v.file.change === "deleted" ? fileDeleted(path) : fileNotFound(path);
      return { content: v.content, hash: v.file.hash, source: "overlay" };
    }
    const repo = await this.registry.repository(ws.repoId);
    const base = await this.git.read(await this.registry.locations.withCommit(repo, ws.baseCommit), ws.baseCommit, path, { bounded: true });
    if (!base) throw fileNotFound(path);
    return { content: base.content, hash: base.hash, source: "base" };
  }

  private async shareRead(ws: Workspace, path: string, at: number): Promise<void> {
    const idx = await this.index.refreshed(ws.repoId, [path]);
    if (this.index.touchedByOther(idx, path, ws.workspaceId)) await sqlRepo.recordRead(this.registry.db, ws.workspaceId, path, new Date(at));
  }

  /**
   * The merged view in path order, from after `after` (exclusive), at most `limit` entries (and whether more follow).
   * The base paths this workspace deleted are listed only with `includeDeleted`: a caller listing files to read them
   * must not get paths that do not exist (issue 29).
   */
  async listFiles(ws: Workspace, prefix: string, after: string, limit: number, includeDeleted: boolean): Promise<{ files: ListedFile[]; more: boolean }> {
    const ov = await this.cache.current(ws);
    const repo = await this.registry.repository(ws.repoId);
    const tree = await this.git.tree(await this.registry.locations.withCommit(repo, ws.baseCommit), ws.baseCommit);
    const start = after > prefix ? after : prefix;
    const inclusive = after <= prefix;
    const base = tree.paths;
    let i = lowerBound(base, start);
    if (!inclusive && i < base.length && base[i] === start) i++;
    const extra = [...ov.files.keys()].filter((p) => p.startsWith(prefix) && (inclusive ? p >= start : p > start)).sort(comparePaths);
    let j = 0;
    const files: ListedFile[] = [];
    for (;;) {
      const b = i < base.length && base[i]!.startsWith(prefix) ? base[i]! : undefined;
      const o = j < extra.length ? extra[j]! : undefined;
      if (b === undefined && o === undefined) return { files: await this.markOthers(ws, files), more: false };
      let path: string;
      if (o !== undefined && (b === undefined || o <= b)) {
        path = o;
        j++;
        if (b === o) i++;
      } else {
        path = b!;
        i++;
      }
      const f = ov.files.get(path);
      // A tombstone of a path the base does not have (the base moved under a rebase) shows nothing.
      if (f?.change === "deleted" && (b !== path || !includeDeleted)) continue;
      if (files.length === limit) return { files: await this.markOthers(ws, files), more: true };
      files.push({
        path,
        source: f ? "overlay" : "base",
        change: f?.change,
        modifiedByOther: false,
      });
    }
  }

  /** modified_by_other of a page, the page's paths checked against PostgreSQL first (one query). */
  private async markOthers(ws: Workspace, files: ListedFile[]): Promise<ListedFile[]> {
    const idx = await this.index.refreshed(ws.repoId, files.map((f) => f.path));
    return files.map((f) => ({ ...f, modifiedByOther: this.index.touchedByOther(idx, f.path, ws.workspaceId) }));
  }
}

