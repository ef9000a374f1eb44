/** Types of listing.mjs (plain JS so the worker thread can load it without a TS loader). */

/** A walk's kept entries, packed (see listing.mjs). */
export interface Listing {
  readonly count: number;
  /** Sanitised names in tree order, joined by "/". */
  readonly names: string;
  /** Per entry: (level << 1) | isDir; level 0 is a child of the root. */
  readonly meta: Uint32Array;
}

export interface ListedEntry {
  readonly path: string;
  readonly isDir: boolean;
}

export declare const NAME_SEPARATOR: string;
export declare function packMeta(level: number, isDir: boolean): number;
export declare function listingEntries(listing: Listing): ListedEntry[];
