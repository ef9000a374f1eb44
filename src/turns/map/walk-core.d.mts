/** Types of walk-core.mjs (plain JS so the worker thread can load it without a TS loader). */
import type { Ignore } from "ignore";
import type { Listing } from "./listing.d.mts";

export type SkipReason = "home_directory" | "filesystem_root" | "opaque_tree";

export interface WalkOptions {
  /** Entries deeper than this are neither listed nor read; root children are depth 1. Infinity: unlimited. */
  readonly maxDepth?: number;
  /** Entries kept (breadth first); the rest are only counted. Infinity: unlimited. */
  readonly maxEntries?: number;
  /** Names longer than this (code points) are truncated with "…". */
  readonly maxNameLength?: number;
  /** The home directory: not walkable itself, and `<home>/Library` is pruned. */
  readonly home?: string | undefined;
}

export type WalkOutcome =
  | {
      readonly kind: "ok";
      readonly realRoot: string;
      /** Kept entries, names sanitised (no control characters), packed (listing.mjs). */
      readonly listing: Listing;
      readonly shown: number;
      /** Entries found within the depth limit, after gitignore rules. */
      readonly total: number;
      readonly truncated: boolean;
      /** Directories that could not be stat'ed or read (their subtrees are missing). */
      readonly unreadable: number;
      /** .gitignore files that could not be read: their directories were walked without their rules. */
      readonly unreadableGitignores: number;
      readonly prunedOpaque: number;
      readonly prunedMounts: number;
    }
  | { readonly kind: "skipped"; readonly reason: SkipReason }
  | { readonly kind: "error"; readonly code: string; readonly message: string };

/** One .gitignore: its rules (an `ignore` instance), asked with paths relative to `base`. */
export interface GitignoreRuleSet {
  /** The .gitignore's directory relative to the walk root ("" for the root). */
  readonly base: string;
  readonly rules: Ignore;
}

export declare const OPAQUE_COMPONENTS: readonly string[];
export declare const HOME_RELATIVE_OPAQUE: readonly string[];
export declare const DEFAULT_MAX_NAME_LENGTH: number;
export declare function isOpaqueComponent(name: string): boolean;
export declare function skipReason(dir: string, home: string | undefined): SkipReason | undefined;
export declare function sanitizeName(name: string, maxLength?: number): string;
/** The most of a .gitignore (or .gitattributes) read, by the walk and by capture. */
export declare const RULE_FILE_MAX_BYTES: number;
export declare function compileGitignore(text: string): Ignore;
export declare function isIgnored(ruleSets: readonly GitignoreRuleSet[], relPath: string, isDir: boolean): boolean;
export declare function walkTree(root: string, options: WalkOptions): WalkOutcome;
