/**
 * The in-memory overlay of each workspace is what makes reads and the write path's checks cheap,
 * and what must be forgotten when a workspace leaves this instance; one owner for it keeps the
 * rule (made on first use, rebuilt from the rows, dropped on exit) in one place.
 */
import type { Db } from "../platform/database.js";
import { BerthError } from "../platform/errors.js";
import { isLiveHere } from "../sessions/registry.js";
import type { Workspace } from "../sessions/workspace.js";
import * as sqlRepo from "./overlay.repository.js";

/** Content up to this size stays in the cache after a write or read. */
export const CACHE_CONTENT_BYTES = 256 * 1024;

/** Overlays of workspaces not live on this instance (another instance's sessions served here) kept at most, least recently used first out. */
export const MAX_NON_LIVE_OVERLAYS = 256;

export interface OverlayCacheOptions {
  /** Default MAX_NON_LIVE_OVERLAYS. */
  readonly maxNonLive?: number;
  /** Whether a workspace is live on this instance (default: its registry holds it live, sessions/registry.ts isLiveHere). */
  readonly isLive?: (ws: Workspace) => boolean;
}

export interface CachedFile {
  /** null: a deletion tombstone. */
  hash: string | null;
  change: sqlRepo.ChangeName;
  baseHash: string | null;
  symbols: string[];
  updatedAt: number;
  size: number | null;
  /** undefined: not in memory (read from PostgreSQL). */
  content: Uint8Array | null | undefined;
}

export interface WorkspaceOverlay {
  readonly files: Map<string, CachedFile>;
  /** Last ReadFile per path (epoch ms); made on the first read. */
  reads: Map<string, number> | undefined;
  /** Serialises this workspace's writes (expected_hash and the symbol diff read the cache). */
  lock: Promise<unknown>;
}

/**
 * Made on a workspace's first use (never at startup: 100,000 idle workspaces cost nothing here):
 * the rows' metadata, and the content of files up to CACHE_CONTENT_BYTES once written or read;
 * larger content is read from PostgreSQL when needed. Dropped when the workspace leaves this
 * instance (strand, abandon, destroy) and rebuilt from the rows on the next use (resume, restart).
 *
 * Workspaces this instance does not hold live (another instance's sessions whose calls a load
 * balancer sent here) end nowhere this cache hears of while they live on: at most `maxNonLive`
 * of their overlays are kept, the least recently used evicted first (rebuilt from the rows on
 * their next use). Live workspaces' overlays are bounded by the live workspaces.
 */
export class OverlayCache {
  /** By workspace id. */
  private readonly caches = new Map<string, Promise<WorkspaceOverlay>>();
  /** The cached overlays of workspaces not live here at their last use, least recently used first. */
  private readonly nonLive = new Set<string>();
  private readonly maxNonLive: number;
  private readonly isLive: (ws: Workspace) => boolean;

  constructor(
    private readonly db: Db,
    options: OverlayCacheOptions = {},
  ) {
    this.maxNonLive = Math.max(1, options.maxNonLive ?? MAX_NON_LIVE_OVERLAYS);
    this.isLive = options.isLive ?? isLiveHere;
  }

  /** Forgets the overlay of a workspace (it left this instance). */
  drop(workspaceId: string): void {
    this.caches.delete(workspaceId);
    this.nonLive.delete(workspaceId);
  }

  /** Forgets every overlay (missed events: rebuilt from the rows on their next use). */
  clear(): void {
    this.caches.clear();
    this.nonLive.clear();
  }

  /** Number of cached overlays of workspaces not live here (tests). */
  get nonLiveSize(): number {
    return this.nonLive.size;
  }

  /** Keeps the LRU order of non-live workspaces' overlays and evicts beyond the bound. */
  private used(ws: Workspace): void {
    const id = ws.workspaceId;
    this.nonLive.delete(id);
    if (this.isLive(ws)) return;
    this.nonLive.add(id);
    for (const oldest of this.nonLive.keys()) {
      if (this.nonLive.size <= this.maxNonLive) break;
      this.nonLive.delete(oldest);
      this.caches.delete(oldest);
    }
  }

  /** The overlay of a workspace: cached, or read from its rows (once, however many callers wait). */
  overlay(ws: Workspace): Promise<WorkspaceOverlay> {
    this.used(ws);
    const hit = this.caches.get(ws.workspaceId);
    if (hit) return hit;
    const p = (async () => {
      const files = new Map<string, CachedFile>();
      for (const row of await sqlRepo.listOverlayMeta(this.db, ws.workspaceId)) {
        files.set(row.path, {
          hash: row.sha256,
          change: row.change,
          baseHash: row.base_hash,
          symbols: row.symbols,
          updatedAt: row.updated_at.getTime(),
          size: row.size,
          content: row.change === "deleted" ? null : undefined,
        });
      }
      return { files, reads: undefined, lock: Promise.resolve() } satisfies WorkspaceOverlay;
    })();
    this.caches.set(ws.workspaceId, p);
    p.catch(() => {
      if (this.caches.get(ws.workspaceId) === p) this.caches.delete(ws.workspaceId);
    });
    return p;
  }

  /** Loads the overlay of a (resumed) workspace ahead of its first call. */
  async rehydrate(ws: Workspace): Promise<number> {
    this.caches.delete(ws.workspaceId);
    return (await this.overlay(ws)).files.size;
  }

  /** Number of workspaces whose overlay is cached (tests, metrics). */
  get size(): number {
    return this.caches.size;
  }

  /** A file's content: from the cache, or read from its row (and cached when small). */
  async contentOf(ws: Workspace, path: string, f: CachedFile): Promise<Uint8Array | null> {
    if (f.content !== undefined) return f.content;
    const c = await sqlRepo.readOverlayContent(this.db, ws.workspaceId, path);
    if (c === undefined) throw new BerthError("internal", "OVERLAY_ROW_MISSING", `the overlay row of ${path} is missing`);
    if (c !== null && c.byteLength <= CACHE_CONTENT_BYTES) f.content = c;
    return c;
  }

  /** Runs `work` after the workspace's previous writes (expected_hash and the symbol diff read the cache). */
  async serialised<T>(ov: WorkspaceOverlay, work: () => Promise<T>): Promise<T> {
    const run = ov.lock.then(work, work);
    ov.lock = run.catch(() => undefined);
    return run;
  }
}
