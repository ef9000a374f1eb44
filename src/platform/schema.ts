/** Row types of every table, as Kysely sees them. */
import type { ColumnType, Generated } from "kysely";

type Timestamp = ColumnType<Date, Date | string, Date | string>;

export interface RepositoryTable {
  id: string;
  name: string;
  source_path: string | null;
  next_agent_number: Generated<number>;
  created_at: Timestamp;
}

export type ChangesetStateName = "draft" | "submitted" | "verifying" | "approved" | "rejected" | "merged" | "closed";

export interface ChangesetTable {
  id: string;
  repo_id: string;
  state: ChangesetStateName;
  reason: Generated<string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type LifecycleName = "active" | "stranded" | "abandoned" | "destroyed";
export type ModeName = "ephemeral" | "persistent";

export interface WorkspaceTable {
  id: string;
  session_id: string;
  repo_id: string;
  agent_id: string;
  agent_name: string;
  changeset_id: string;
  intent: string;
  base_commit: string;
  mode: ModeName;
  expires_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  created_at: Timestamp;
  last_active_at: Timestamp;
  lifecycle: Generated<LifecycleName>;
  lifecycle_reason: Generated<string>;
  stranded_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  ended_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  resumed_from: string | null;
  /** The instance whose memory holds it while active (migrations/0002_lifecycle.ts). */
  owner_instance: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SessionRedirectTable {
  dead_session_id: string;
  new_session_id: string;
  workspace_id: string;
  created_at: Timestamp;
}

export interface EventTable {
  /** Insert order; the sequencer numbers committed rows in this order. */
  staged: ColumnType<string | number | bigint, never, never>;
  /** int8, NULL until sequenced: pg returns it as a string, PGlite as a number or bigint; read it through toSeq(). */
  seq: ColumnType<string | number | bigint | null, never, never>;
  id: string;
  kind: string;
  repo_id: string;
  session_id: string | null;
  workspace_id: string | null;
  agent_id: string | null;
  changeset_id: string | null;
  occurred_at: Timestamp;
  reason: string;
  payload: Uint8Array;
}

export interface Database {
  repositories: RepositoryTable;
  changesets: ChangesetTable;
  workspaces: WorkspaceTable;
  session_redirects: SessionRedirectTable;
  events: EventTable;
}

export function toSeq(value: string | number | bigint): bigint {
  return typeof value === "bigint" ? value : BigInt(value);
}
