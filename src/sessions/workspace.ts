/** The registry's view of a workspace, independent of the wire and of SQL, and the one check that it may be used. */
import { failedPrecondition } from "../platform/errors.js";
import type { ChangesetStateName, LifecycleName, ModeName } from "../platform/schema.js";

export interface Repository {
  readonly id: string;
  readonly name: string;
  readonly sourcePath: string | null;
  /** The git server's URL (RegisterRepository remote_url); null with a source path or neither. Where its objects are: repository/locations.ts. */
  readonly remoteUrl: string | null;
  readonly createdAt: number;
  /** What a turn's capture leaves out besides .gitignore (gitignore syntax). */
  readonly captureExclude: readonly string[];
  /**
   * APPROVED and MERGED only from a principal other than the changeset's authors (docs/security.md).
   * As last read on this instance: the transition reads it again from PostgreSQL under its lock.
   */
  readonly independentReview: boolean;
  /** The check run when a changeset moves to VERIFYING (SetRepositoryCheck); absent: none. */
  readonly check?: RepositoryCheck | undefined;
}

/** A repository's check: a command (no shell) and how long it may run. */
export interface RepositoryCheck {
  readonly argv: readonly string[];
  readonly timeoutSeconds: number;
}

export interface Changeset {
  readonly id: string;
  readonly repoId: string;
  state: ChangesetStateName;
  reason: string;
  readonly createdAt: number;
  updatedAt: number;
  /**
   * The row's version (changesets.version, bumped by the database with every state change): what
   * orders the states an instance hears of, whichever instance's clock stamped updatedAt. -1:
   * read without it (landing's rows), older than any.
   */
  version: number;
  /** The commit landing last wrote for it (src/overlay/landing.ts), when the caller read it. */
  commitId?: string;
  committedAt?: number;
}

/**
 * One workspace. Kept compact: 100,000 of these sit in memory, so times are epoch-ms numbers
 * and the changeset's state is read from the shared Changeset, not copied.
 */
export interface Workspace {
  readonly workspaceId: string;
  sessionId: string;
  readonly repoId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly changeset: Changeset;
  readonly intent: string;
  /** Moved by RebaseWorkspace (the registry refreshes it from the row on every lookup). */
  baseCommit: string;
  readonly mode: ModeName;
  readonly expiresAt: number | null;
  readonly createdAt: number;
  lastActiveAt: number;
  lifecycle: LifecycleName;
  lifecycleReason: string;
  strandedAt: number | null;
  resumedFrom: string | null;
}

/**
 * Refuses a workspace that may not be used: stranded, abandoned and destroyed sessions answer
 * FAILED_PRECONDITION with the facts a client needs to act (re-exported by registry.ts).
 */
export function assertActive(ws: Workspace): void {
  switch (ws.lifecycle) {
    case "active":
      return;
    case "stranded":
      throw failedPrecondition("SESSION_STRANDED", `session ${ws.sessionId} is stranded; resume it with ResumeSession`, {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        changeset_id: ws.changeset.id,
        stranded_at: new Date(ws.strandedAt ?? 0).toISOString(),
        reason: ws.lifecycleReason,
      });
    case "abandoned":
      throw failedPrecondition("SESSION_ABANDONED", `session ${ws.sessionId} was abandoned`, {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        changeset_id: ws.changeset.id,
        reason: ws.lifecycleReason,
      });
    case "destroyed":
      throw failedPrecondition("SESSION_DESTROYED", `session ${ws.sessionId} was destroyed`, {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        reason: ws.lifecycleReason,
      });
  }
}
