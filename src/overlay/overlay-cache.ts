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
import { addLive, removeLive, type LiveDirs } from "./path-shape.js";

type Executor = Parameters<typeof sqlRepo.loadOverlay>[0];

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
  /** Changed through the cache's methods only: `dirs` follows it. */
  readonly files: Map<string, CachedFile>;
  /** The directories of the live files in `files` (a write's file-or-directory check, path-shape.ts). */
  readonly dirs: LiveDirs;
  /**
   * workspaces.overlay_version of the state `files` holds: the cache is current while the row
   * says the same (another instance's write bumps the row, and the next call here reloads).
   */
  version: number;
  /** performance.now() when the query of the state `files` holds was sent (its snapshot is later). */
  loadedAt: number;
  /** A reload in flight, which callers that found the cache behind share. */
  reloading: Promise<void> | undefined;
  /** Last ReadFile per path (epoch ms); made on the first read. */
  reads: Map<string, number> | undefined;
  /** Serialises this workspace's writes (expected_hash and the symbol diff read the cache). */
  lock: Promise<unknown>;
}

/** A path of the overlay as the cache holds it, with its content. */
export interface CachedView {
  readonly file: CachedFile;
  readonly content: Uint8Array | null;
}

/** The cache's form of a row (its content: given, or not in memory). */
export function cachedFileOf(row: sqlRepo.OverlayMetaRow, content: Uint8Array | null | undefined): CachedFile {
  return {
    hash: row.sha256,
    change: row.change,
    baseHash: row.base_hash,
    symbols: row.symbols,
    updatedAt: row.updated_at.getTime(),
    size: row.size,
    content: row.change === "deleted" ? null : content !== null && content !== undefined && content.byteLength > CACHE_CONTENT_BYTES ? undefined : content,
  };
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
 *
 * Several instances: other instances write the same rows. `current` checks the cache against
 * workspaces.overlay_version (one primary-key lookup) before a call answers from it, and reloads
 * the rows' metadata when they differ, keeping the content of files whose hash did not change.
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

  /**
   * The overlay of a workspace as cached, or read from its rows (once, however many callers
   * wait); not checked against other instances' writes: `current` is.
   */
  overlay(ws: Workspace): Promise<WorkspaceOverlay> {
    this.used(ws);
    const hit = this.caches.get(ws.workspaceId);
    if (hit) return hit;
    const p = (async () => {
      const loadedAt = performance.now();
      const { version, rows } = await sqlRepo.loadOverlay(this.db, ws.workspaceId);
      const ov: WorkspaceOverlay = { files: new Map(), dirs: new Map(), version, loadedAt, reloading: undefined, reads: undefined, lock: Promise.resolve() };
      for (const row of rows) setFile(ov, row.path, cachedFileOf(row, undefined));
      return ov;
    })();
    this.caches.set(ws.workspaceId, p);
    p.catch(() => {
      if (this.caches.get(ws.workspaceId) === p) this.caches.delete(ws.workspaceId);
    });
    return p;
  }

  /**
   * The overlay of a workspace with every write acknowledged before `since` (performance.now()
   * when the call began, on any instance) in it: the cache, checked against the row's
   * overlay_version, reloaded when another instance changed the overlay.
   */
  async current(ws: Workspace, since = performance.now()): Promise<WorkspaceOverlay> {
    const ov = await this.overlay(ws);
    await this.validate(ws, ov, since);
    return ov;
  }

  /** Brings `ov` up to the database's state as of `since` (see `current`). */
  async validate(ws: Workspace, ov: WorkspaceOverlay, since: number): Promise<void> {
    // Loaded by a query sent after the call began: nothing acknowledged before it is missing.
    if (ov.loadedAt >= since) return;
    const version = await sqlRepo.overlayVersion(this.db, ws.workspaceId);
    if (version > ov.version) await this.reload(ws, ov, version);
  }

  /** Reloads the rows' metadata until the cache holds `atLeast` (a reload in flight is shared). */
  private async reload(ws: Workspace, ov: WorkspaceOverlay, atLeast: number): Promise<void> {
    while (ov.version < atLeast && ov.reloading) await ov.reloading;
    if (ov.version >= atLeast) return;
    // Our own reload: its snapshot postdates the version we were asked for.
    const p = (async () => {
      const loadedAt = performance.now();
      takeLoaded(ov, await sqlRepo.loadOverlay(this.db, ws.workspaceId), loadedAt);
    })();
    ov.reloading = p;
    try {
      await p;
    } finally {
      if (ov.reloading === p) ov.reloading = undefined;
    }
  }

  /**
   * A path's row as read from PostgreSQL (a write decided again): the cache takes it without
   * moving its version, so the next call reloads the rest.
   */
  takeRow(ov: WorkspaceOverlay, path: string, file: CachedFile | undefined): void {
    setFile(ov, path, file);
  }

  /**
   * Reloads the rows' metadata on `db` (a write's transaction, under the workspace row lock:
   * nothing else can change them) when the row's version is past the cache's.
   */
  async reloadIn(db: Executor, ws: Workspace, ov: WorkspaceOverlay): Promise<void> {
    const loadedAt = performance.now();
    takeLoaded(ov, await sqlRepo.loadOverlay(db, ws.workspaceId), loadedAt);
  }

  /**
   * This instance's write committed, leaving the workspace at `version`: the cache takes the
   * path's new state, and the version when it held the one before (otherwise another instance
   * wrote in between, and the next call reloads).
   */
  committed(ov: WorkspaceOverlay, path: string, file: CachedFile | undefined, version: number): void {
    // A reload already brought this write (or later ones).
    if (ov.version >= version) return;
    this.takeRow(ov, path, file);
    if (ov.version === version - 1) ov.version = version;
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

  /**
   * A path of the overlay with its content: from the cache, or the content read from its row
   * (and cached when small) while the row still holds the cached hash. When another instance
   * changed the row meanwhile, the cache is reloaded and the path looked up again. Undefined:
   * the overlay has no row for the path.
   */
  async view(ws: Workspace, ov: WorkspaceOverlay, path: string): Promise<CachedView | undefined> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const f = ov.files.get(path);
      if (!f) return undefined;
      if (f.content !== undefined) return { file: f, content: f.content };
      const c = await sqlRepo.readOverlayContent(this.db, ws.workspaceId, path, f.hash);
      if (c !== undefined) {
        if (c !== null && c.byteLength <= CACHE_CONTENT_BYTES && ov.files.get(path) === f) f.content = c;
        return { file: f, content: c };
      }
      await this.reload(ws, ov, ov.version + 1);
    }
    throw new BerthError("aborted", "OVERLAY_CHANGING", `the overlay row of ${path} kept changing while it was read; retry`, { path });
  }

  /** Runs `work` after the workspace's previous writes (expected_hash and the symbol diff read the cache). */
  async serialised<T>(ov: WorkspaceOverlay, work: () => Promise<T>): Promise<T> {
    const run = ov.lock.then(work, work);
    ov.lock = run.catch(() => undefined);
    return run;
  }
}

/** One path of the cache, and the directories of its live files with it. */
function setFile(ov: WorkspaceOverlay, path: string, file: CachedFile | undefined): void {
  const wasLive = isLive(ov.files.get(path));
  if (file) ov.files.set(path, file);
  else ov.files.delete(path);
  const live = isLive(file);
  if (live && !wasLive) addLive(ov.dirs, path);
  else if (!live && wasLive) removeLive(ov.dirs, path, (p) => isLive(ov.files.get(p)));
}

function isLive(f: CachedFile | undefined): boolean {
  return f !== undefined && f.hash !== null;
}

/** The rows as loaded, keeping the content of files whose hash did not change; unless the cache is already at or past them. */
function takeLoaded(ov: WorkspaceOverlay, loaded: { version: number; rows: readonly sqlRepo.OverlayMetaRow[] }, loadedAt: number): void {
  // A local write may have brought the cache past this snapshot meanwhile.
  if (loaded.version <= ov.version) return;
  const before = new Map(ov.files);
  ov.files.clear();
  ov.dirs.clear();
  for (const row of loaded.rows) {
    const kept = before.get(row.path);
    setFile(ov, row.path, cachedFileOf(row, kept && kept.hash === row.sha256 ? kept.content : undefined));
  }
  ov.version = loaded.version;
  ov.loadedAt = loadedAt;
}
