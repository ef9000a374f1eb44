import type { ListedEntry, Listing } from "./listing.mjs";
import type { SkipReason, WalkOptions } from "./walk-core.mjs";

export type { Listing, SkipReason, WalkOptions };

/** One entry of the map: a "/"-separated path relative to the root, sanitised. */
export type MapEntry = ListedEntry;

export interface WorkspaceMap {
  /** The root as given by the caller (never canonicalised on the request path). */
  readonly root: string;
  /** Kept entries in tree order (siblings sorted by name). */
  readonly entries: readonly MapEntry[];
  readonly shown: number;
  /** Entries found within the depth limit, after gitignore rules. */
  readonly total: number;
  readonly truncated: boolean;
  readonly maxDepth: number;
  /** The rendered "Workspace file map (...)" block. */
  readonly text: string;
  /** Clock time (ms) at which the walk's result arrived. */
  readonly builtAt: number;
}

export type MapResult =
  /** A map fresher than the TTL (or just walked). */
  | { readonly status: "ok"; readonly map: WorkspaceMap }
  /** The last good map, served while a walk of the root is in flight or after a budget lapse. */
  | { readonly status: "stale"; readonly map: WorkspaceMap; readonly why: "walk_in_flight" | "over_budget" }
  /** No map: the walk did not finish within the budget (or did not recently). The turn proceeds. */
  | { readonly status: "over_budget" }
  /** No map, by rule: a home directory, a filesystem root or an opaque (cloud-sync/OS) tree. */
  | { readonly status: "skipped"; readonly reason: SkipReason }
  /** The caller's signal fired; the walk, if any, keeps running. */
  | { readonly status: "cancelled" }
  /** No map: the walk itself failed (root missing, not a directory, unreadable). */
  | { readonly status: "failed"; readonly code: string; readonly message: string };

/**
 * What a walk returns, on the main thread. The kept entries stay packed as the worker sent
 * them (listing.mjs); listingEntries makes them objects when the map is built.
 */
export type WalkResult =
  | { readonly kind: "ok"; readonly listing: Listing; readonly total: number }
  | { readonly kind: "skipped"; readonly reason: SkipReason }
  | { readonly kind: "error"; readonly code: string; readonly message: string };

/**
 * The walk, injectable. The default runs in a dedicated worker thread. A test injects a
 * promise that never settles to stand for a wedged filesystem, which no real directory can.
 */
export type Walker = (root: string, options: WalkOptions) => Promise<WalkResult>;

export interface MapLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface Clock {
  now(): number;
}
