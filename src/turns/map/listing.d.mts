/** Types of listing.mjs (plain JS so the worker thread can load it without a TS loader). */

/** A walk's kept entries, packed, breadth first (see listing.mjs). */
export interface Listing {
  readonly count: number;
  /** Sanitised names, breadth first, joined by "/". */
  readonly names: string;
  /** Per entry: the queue slot of a directory the walk read (>= 0), NOT_DESCENDED or FILE. */
  readonly kinds: Int32Array;
  /** Per queue slot (0: the root): how many of its children were kept. */
  readonly kids: Uint32Array;
}

export interface ListedEntry {
  readonly path: string;
  readonly isDir: boolean;
}

export declare const NAME_SEPARATOR: string;
export declare const NOT_DESCENDED: number;
export declare const FILE: number;
export declare function listingEntries(listing: Listing): ListedEntry[];
