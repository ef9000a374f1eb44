/**
 * The in-memory overlay of each workspace is what makes reads and the write path's checks cheap,
 * and what must be forgotten when a workspace leaves this instance; one owner for it keeps the
 * rule (made on first use, rebuilt from the rows, dropped on exit) in one place.
 */
import type { Db } from "../platform/database.js";
import { BerthError } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import * as sqlRepo from "./overlay.repository.js";

/** Content up to this size stays in the cache after a write or read. */
export const CACHE_CONTENT_BYTES = 256 * 1024;

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
 */
export class OverlayCache {
  /** By workspace id. */
  private readonly caches = new Map<string, Promise<WorkspaceOverlay>>();

  constructor(private readonly db: Db) {}

  /** Forgets the overlay of a workspace (it left this instance). */
  drop(workspaceId: string): void {
    this.caches.delete(workspaceId);
  }

  /** Forgets every overlay (missed events: rebuilt from the rows on their next use). */
  clear(): void {
    this.caches.clear();
  }

  /** The overlay of a workspace: cached, or read from its rows (once, however many callers wait). */
  overlay(ws: Workspace): Promise<WorkspaceOverlay> {
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
