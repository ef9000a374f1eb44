/** The registry's view of a workspace, independent of the wire and of SQL. */
import type { ChangesetStateName, LifecycleName, ModeName } from "../platform/schema.js";

export interface Repository {
  readonly id: string;
  readonly name: string;
  readonly sourcePath: string | null;
  readonly createdAt: number;
}

export interface Changeset {
  readonly id: string;
  readonly repoId: string;
  state: ChangesetStateName;
  reason: string;
  readonly createdAt: number;
  updatedAt: number;
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
  readonly baseCommit: string;
  readonly mode: ModeName;
  readonly expiresAt: number | null;
  readonly createdAt: number;
  lastActiveAt: number;
  lifecycle: LifecycleName;
  lifecycleReason: string;
  strandedAt: number | null;
  resumedFrom: string | null;
}
