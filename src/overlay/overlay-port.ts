/**
 * What the rest of Berth needs of the overlay: the turn scheduler captures a directory's
 * changes through exactly the same path as the WriteFile and DeleteFile RPCs (claims, events),
 * and materialises environments from the base plus the overlay.
 */
import type { Workspace } from "../sessions/workspace.js";

export type FileChangeName = "added" | "modified" | "deleted";
export type SymbolChangeName = "added" | "modified" | "deleted";

export interface SymbolChangeInfo {
  readonly name: string;
  readonly kind: string;
  readonly change: SymbolChangeName;
}

export interface OtherModifierInfo {
  readonly sessionId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly symbols: readonly string[];
  readonly changesetState: string;
}

export interface WriteInput {
  readonly workspace: Workspace;
  /** Normalised repository-relative path. */
  readonly path: string;
  readonly content: Uint8Array;
  /** sha256 hex of the current content; "" = the file must not exist; undefined = unconditional. */
  readonly expectedHash?: string | undefined;
  readonly declaredSymbols?: readonly string[];
  /** The call's: a write whose caller gave up (cancel, deadline) before it commits is not stored. */
  readonly signal?: AbortSignal | undefined;
  /**
   * The turn scheduler's capture of a session that has just been stranded (the session-end
   * watch, a restart's recovery): the write is allowed while the workspace is stranded under
   * this session id, so the turn's edits reach the overlay ResumeSession restores. Claims are
   * checked (SYMBOL_LOCKED) but not taken: a stranded session holds none.
   */
  readonly ending?: boolean;
}

export interface WriteResult {
  readonly newHash: string;
  readonly change: Exclude<FileChangeName, "deleted">;
  readonly symbols: readonly SymbolChangeInfo[];
  readonly conflicts: readonly OtherModifierInfo[];
}

export interface DeleteInput {
  readonly workspace: Workspace;
  readonly path: string;
  readonly expectedHash?: string | undefined;
  /** As WriteInput.signal. */
  readonly signal?: AbortSignal | undefined;
  /** As WriteInput.ending. */
  readonly ending?: boolean;
}

export interface DeleteResult {
  readonly symbols: readonly SymbolChangeInfo[];
  readonly conflicts: readonly OtherModifierInfo[];
}

/** One overlay entry of a workspace: content for writes, null for a deletion (tombstone). */
export interface OverlayEntry {
  readonly path: string;
  readonly content: Uint8Array | null;
  readonly hash: string | null;
}

/**
 * The overlay's size against its quota as this instance knows it (its cache, checked against
 * workspaces.overlay_version): what a capture asks before it reads a file, so that a file that
 * cannot fit is never read. An estimate: the write's own check, in PostgreSQL, decides.
 */
export interface OverlayUse {
  /** Rows (written and deleted paths) and content bytes the overlay holds. */
  readonly files: number;
  readonly bytes: number;
  /** BERTH_MAX_OVERLAY_FILES / BERTH_MAX_OVERLAY_BYTES; 0: no limit. */
  readonly maxFiles: number;
  readonly maxBytes: number;
  /** The content bytes of a path's row (0 for a deletion), undefined when the overlay has no row for it. */
  rowBytes(path: string): number | undefined;
}

export interface OverlayPort {
  writeFile(input: WriteInput): Promise<WriteResult>;
  deleteFile(input: DeleteInput): Promise<DeleteResult>;
  /** Every overlay entry of the workspace (from the in-memory cache, rebuilt from PostgreSQL). */
  entries(workspace: Workspace): Promise<readonly OverlayEntry[]>;
  /** The base content of a path at the workspace's base commit; undefined when it does not exist there. */
  readBase(workspace: Workspace, path: string): Promise<Uint8Array | undefined>;
  /** The overlay's size and quota (an estimate; see OverlayUse). */
  usage(workspace: Workspace): Promise<OverlayUse>;
}
