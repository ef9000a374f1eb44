/**
 * What an environment is, as the rest of the turn layer holds it: the in-memory record of one
 * directory (its token, its manifest, what its marker looked like), what a teardown reports, and
 * where the directory of a workspace is under BERTH_ENV_ROOT (the layout: environment.ts). The
 * lowest of the environment-* modules: the others build on it, and it imports none of them.
 */
import path from "node:path";

/** What the directory held for a path when it was last materialised or captured. */
export interface ManifestEntry {
  size: number;
  mtimeMs: number;
  /** git blob id (sha1 of "blob <len>\0<content>") of the content. */
  blob: string;
}

export type Manifest = Map<string, ManifestEntry>;

/** One environment: a directory with an identity (token). A rebuilt directory is a new Environment. */
export interface Environment {
  readonly workspaceId: string;
  readonly path: string;
  /** Random, written into the marker; teardown removes the directory only while the marker holds it. */
  readonly token: string;
  manifest: Manifest;
  /** Set when its teardown started; the teardown's promise (idempotent). */
  teardown?: Promise<TeardownResult>;
  /**
   * The marker file as it was when it last held this environment's token (written, or read by a
   * probe): a probe that finds the file unchanged since needs no read (probe).
   */
  markerSeen?: MarkerSeen;
  /**
   * The agent's HEAD as the last EndTurn in this environment read it (capture.ts commitMessages):
   * the next turn keeps only the messages of commits made since. In memory only: an environment
   * left by a previous process is captured and torn down, never reused.
   */
  headSeen?: string;
}

/**
 * What stat says of a marker file. Unchanged means the same file with the same content: writing
 * it, renaming it, linking it, changing its mode or owner all move its ctime, which no process
 * can set; and while the environment holds the directory nothing of Berth's writes the marker.
 */
export interface MarkerSeen {
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly ctimeMs: number;
}

export interface TeardownResult {
  /** removed: the directory is gone; preserved: moved to .unsaved (capture failed); foreign: not ours, left alone; absent: nothing there. */
  readonly outcome: "removed" | "preserved" | "foreign" | "absent";
  readonly capturedPaths: readonly string[];
  readonly failedPaths: readonly string[];
}

export function envPath(root: string, workspaceId: string): string {
  return path.join(root, workspaceId);
}

export interface DirectoryDiff {
  /** Added or modified, with their content and new manifest entry. */
  readonly written: { path: string; content: Uint8Array; entry: ManifestEntry; added: boolean }[];
  readonly deleted: string[];
  /** Size/mtime changed but the content did not: only the manifest needs the new stat. */
  readonly touched: { path: string; entry: ManifestEntry }[];
}
