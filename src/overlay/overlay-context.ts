/**
 * The overlay's settings, dependencies and the context its parts share, apart from the facade
 * (overlay-service.ts) so that the parts (cache, writes, reads, claiming) can use them without
 * importing the facade that composes them.
 */
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { GitBase } from "./git-base.js";
import type { ModifiersIndex } from "./modifiers-index.js";
import type { OverlayCache } from "./overlay-cache.js";
import type { SymbolDiffer } from "./symbols/pool.js";

export interface OverlaySettings {
  /** BERTH_MAX_FILE_BYTES */
  readonly maxFileBytes: number;
  /** BERTH_MAX_OVERLAY_FILES, BERTH_MAX_OVERLAY_BYTES: per workspace; 0 = no limit. */
  readonly maxOverlayFiles?: number;
  readonly maxOverlayBytes?: number;
}

export interface OverlayDeps {
  readonly registry: WorkspaceRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: OverlaySettings;
  /** Symbol diffs (default: a pool of worker threads the service starts and closes). */
  readonly symbols?: SymbolDiffer;
}

/** What every part of the overlay is given by the facade. */
export interface OverlayContext extends OverlayDeps {
  readonly git: GitBase;
  readonly index: ModifiersIndex;
  readonly cache: OverlayCache;
  /** Symbol diffs of the write path (a worker pool in the server). */
  readonly symbols: SymbolDiffer;
}
