/**
 * Row types of every table the migrations create (migrations/0001–0007), as Kysely sees them,
 * and TABLE_COLUMNS, the column names of each: test/platform/schema.test.ts compares those
 * against the migrated database, so a migration that adds a column nobody typed fails the tests.
 */
import type { ColumnType, Generated } from "kysely";

/** timestamptz NOT NULL, no default. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** timestamptz NOT NULL DEFAULT now(). */
type DefaultedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** timestamptz, nullable, no default (NULL until set). */
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
/** int8 as read: pg returns it as a string, PGlite as a number or bigint; read it through toSeq(). */
type Int8 = string | number | bigint;
/** bigserial: the database numbers it, nobody writes it. */
type Serial8 = ColumnType<Int8, never, never>;

// ---- 0001_foundation ----------------------------------------------------------------------

export interface RepositoryTable {
  id: string;
  name: string;
  source_path: string | null;
  next_agent_number: Generated<number>;
  created_at: Timestamp;
  /** Patterns a turn's capture leaves out (migrations/0011_repository_capture_exclude.ts). */
  capture_exclude: Generated<string[]>;
  /** The RegisterRepository `request_id` that registered it (migrations/0016_repository_request_id.ts). */
  request_id: string | null;
  /** The git server's URL, credentials never in it (migrations/0020_repository_remote.ts); NULL with a source_path or neither. */
  remote_url: Generated<string | null>;
  /** The check run on VERIFYING, an argv (migrations/0024_verifications.ts); NULL: none. */
  check_argv: Generated<string[] | null>;
  check_timeout_seconds: Generated<number | null>;
  /** APPROVED and MERGED only from a non-author (migrations/0021_reservations_and_independent_review.ts). */
  independent_review: Generated<boolean>;
}

export type ChangesetStateName = "draft" | "submitted" | "verifying" | "approved" | "rejected" | "merged" | "closed";

export interface ChangesetTable {
  id: string;
  repo_id: string;
  state: ChangesetStateName;
  reason: Generated<string>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The commit last written for it (migrations/0012_changeset_commits.ts); NULL before. */
  commit_id: Generated<string | null>;
  committed_at: Generated<Timestamp | null>;
  /**
   * Bumped by every statement that changes the state (migrations/0018_changeset_version.ts):
   * the order of a changeset's states, assigned by the database; read it through toSeq().
   */
  version: Generated<Int8>;
  /** The branch a MERGED transition merged it into (migrations/0022); NULL otherwise. */
  merged_into: Generated<string | null>;
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
  stranded_at: NullableTimestamp;
  ended_at: NullableTimestamp;
  resumed_from: string | null;
  /** The instance whose memory holds it while active (migrations/0002_lifecycle.ts). */
  owner_instance: ColumnType<string | null, string | null | undefined, string | null>;
  /** Bumped by every change of the workspace's overlay rows (migrations/0007_overlay_version.ts); read it through toSeq(). */
  overlay_version: Generated<Int8>;
  /** The workspace's overlay rows and the sum of their content bytes, kept by the statements that change the rows (migrations/0017_overlay_counters.ts). */
  overlay_files_count: Generated<Int8>;
  overlay_bytes: Generated<Int8>;
  /** CreateWorkspace's `request_id`, unique per (repository, agent) (migrations/0015_request_ids.ts). */
  create_request_id: string | null;
}

export interface SessionRedirectTable {
  dead_session_id: string;
  new_session_id: string;
  workspace_id: string;
  created_at: Timestamp;
}

export interface EventTable {
  /** Insert order; the sequencer numbers committed rows in this order. */
  staged: Serial8;
  /** int8, NULL until sequenced (by the sequencer, never by an insert). */
  seq: ColumnType<Int8 | null, never, never>;
  id: string;
  kind: string;
  repo_id: string;
  session_id: string | null;
  workspace_id: string | null;
  agent_id: string | null;
  changeset_id: string | null;
  occurred_at: Timestamp;
  reason: Generated<string>;
  payload: Uint8Array;
}

/** One row (id 1): the highest seq the sequencer has assigned (src/delivery/sequencer.ts). */
export interface OutboxHeadTable {
  id: number;
  last_seq: Int8;
}

// ---- 0002_lifecycle -----------------------------------------------------------------------

/** One row per process start (an incarnation) of a Berth instance. */
export interface InstanceTable {
  id: string;
  /** Stable across restarts of the same instance (host and port). */
  name: string;
  started_at: Timestamp;
  heartbeat_at: Timestamp;
  stopped_at: NullableTimestamp;
  /** The internal gRPC address other instances forward turn RPCs to (migrations/0008). */
  advertise_addr: ColumnType<string | null, string | null | undefined, string | null>;
}

// ---- 0003_events --------------------------------------------------------------------------

/** The NATS relay's cursor per JetStream stream. */
export interface RelayCursorTable {
  stream: string;
  /** Every event with seq <= last_seq has been acknowledged by JetStream. */
  last_seq: ColumnType<Int8, Int8 | undefined, Int8>;
  updated_at: DefaultedTimestamp;
}

/** One row (id 1): how far retention pruning has deleted the outbox. */
export interface EventRetentionTable {
  /** smallint */
  id: number;
  /** Events with seq <= pruned_through have been deleted. */
  pruned_through: ColumnType<Int8, Int8 | undefined, Int8>;
}

// ---- 0004_overlay -------------------------------------------------------------------------

export type FileChangeName = "added" | "modified" | "deleted";

export interface OverlayFileTable {
  workspace_id: string;
  path: string;
  repo_id: string;
  /** NULL exactly for a deletion tombstone. pg returns a Buffer (a Uint8Array). */
  content: Uint8Array | null;
  sha256: string | null;
  change: FileChangeName;
  /** The base's sha256; NULL when the base has no such file. */
  base_hash: string | null;
  /** text[]: the symbols the session changed in the file (cumulative). */
  symbols: Generated<string[]>;
  updated_at: Timestamp;
}

/** One row per (repository, path, qualified symbol); symbol '' is the file as a whole. */
export interface ClaimTable {
  repo_id: string;
  path: string;
  symbol: string;
  workspace_id: string;
  session_id: string;
  agent_id: string;
  agent_name: string;
  acquired_at: Timestamp;
  /** A reservation: the workspace's file does not define the symbol (migrations/0021_reservations_and_independent_review.ts). */
  not_yet_defined: Generated<boolean>;
}

// ---- 0005_turns ---------------------------------------------------------------------------

export type TurnStateName = "running" | "ended" | "superseded" | "cancelled";
export type OutcomeName = "completed" | "awaiting_approval" | "failed";

export interface TurnTable {
  id: string;
  /** Insertion order: breaks ties of started_at. */
  seq: Serial8;
  session_id: string;
  workspace_id: string;
  repo_id: string;
  client_turn_id: string | null;
  state: TurnStateName;
  /** Set when ended only. */
  outcome: OutcomeName | null;
  environment_path: string;
  warm: boolean;
  superseded_by: string | null;
  end_reason: Generated<string>;
  /** The incarnation (instances.id) that ran it. */
  instance_id: string | null;
  started_at: Timestamp;
  ended_at: NullableTimestamp;
  /** The instance that ran it no longer holds the workspace's environment (migrations/0008). */
  environment_released: Generated<boolean>;
  /** What EndTurn captured, answered again to a retried EndTurn (migrations/0010); NULL otherwise. */
  captured_paths: string[] | null;
  /** What that capture left out on purpose, answered again with captured_paths (migrations/0010). */
  left_out: LeftOutRow[] | null;
  /** The command's exit status as EndTurn reported it (migrations/0019); NULL: not reported. */
  exit_code: number | null;
  /** The signal that killed the command, as EndTurn reported it (migrations/0019); NULL: not reported. */
  exit_signal: string | null;
  /** The messages of the agent's own commits kept at EndTurn, oldest first (migrations/0019); NULL: not ended by EndTurn. */
  commit_messages: string[] | null;
}

/** turns.left_out entries (jsonb). */
export interface LeftOutRow {
  path: string;
  reason: "gitignored" | "excluded" | "too_large" | "git_directory";
}

// ---- 0009_overlay_reads -------------------------------------------------------------------

/** The last ReadFile of a path by a workspace, kept when another session had touched the path then. */
export interface OverlayReadTable {
  workspace_id: string;
  path: string;
  read_at: Timestamp;
}

/** One state change of a changeset, written with it (migrations/0022_changeset_transitions.ts). */
export interface ChangesetTransitionTable {
  changeset_id: string;
  /** changesets.version after the change: the history's order. */
  version: Int8;
  from_state: ChangesetStateName;
  to_state: ChangesetStateName;
  reason: string;
  /** The calling agent, "anonymous" (auth off) or "berth" (the server's own move). */
  who: string;
  at: Timestamp;
}

// ---- 0023_comments ------------------------------------------------------------------------

/** A review comment on a changeset (migrations/0023_comments.ts); never deleted, resolved by setting resolved_*. */
export interface CommentTable {
  id: string;
  changeset_id: string;
  repo_id: string;
  /** Empty: on the changeset as a whole. */
  path: Generated<string>;
  /** 0: the whole file (or the changeset). */
  line: Generated<number>;
  body: string;
  author: string;
  created_at: Timestamp;
  resolved_by: ColumnType<string | null, string | null | undefined, string | null>;
  resolved_at: NullableTimestamp;
}

export type VerificationStateName = "running" | "passed" | "failed" | "error";

/** One run of a repository's check on a changeset moved to VERIFYING (migrations/0024_verifications.ts). */
export interface VerificationTable {
  id: string;
  changeset_id: string;
  repo_id: string;
  state: VerificationStateName;
  argv: string[];
  timeout_seconds: number;
  /** The changeset's commit the check ran on (CommitChangeset's), once built. */
  commit_id: string | null;
  exit_code: number | null;
  reason: Generated<string>;
  /** The last bytes of the check's output (stdout and stderr interleaved), UTF-8. */
  output_tail: Generated<string>;
  started_at: Timestamp;
  finished_at: Timestamp | null;
  /** The incarnation (instances.id) running it. */
  instance_id: string | null;
}

// ---- every table --------------------------------------------------------------------------

export interface Database {
  repositories: RepositoryTable;
  changesets: ChangesetTable;
  workspaces: WorkspaceTable;
  session_redirects: SessionRedirectTable;
  events: EventTable;
  outbox_head: OutboxHeadTable;
  instances: InstanceTable;
  relay_cursor: RelayCursorTable;
  event_retention: EventRetentionTable;
  overlay_files: OverlayFileTable;
  claims: ClaimTable;
  turns: TurnTable;
  overlay_reads: OverlayReadTable;
  changeset_transitions: ChangesetTransitionTable;
  comments: CommentTable;
  verifications: VerificationTable;
}

const COLUMNS = {
  repositories: ["id", "name", "source_path", "next_agent_number", "created_at", "capture_exclude", "request_id", "remote_url", "check_argv", "check_timeout_seconds", "independent_review"],
  changesets: ["id", "repo_id", "state", "reason", "created_at", "updated_at", "commit_id", "committed_at", "version", "merged_into"],
  workspaces: [
    "id", "session_id", "repo_id", "agent_id", "agent_name", "changeset_id", "intent", "base_commit", "mode", "expires_at",
    "created_at", "last_active_at", "lifecycle", "lifecycle_reason", "stranded_at", "ended_at", "resumed_from", "owner_instance",
    "overlay_version", "create_request_id", "overlay_files_count", "overlay_bytes",
  ],
  session_redirects: ["dead_session_id", "new_session_id", "workspace_id", "created_at"],
  events: ["staged", "seq", "id", "kind", "repo_id", "session_id", "workspace_id", "agent_id", "changeset_id", "occurred_at", "reason", "payload"],
  outbox_head: ["id", "last_seq"],
  instances: ["id", "name", "started_at", "heartbeat_at", "stopped_at", "advertise_addr"],
  relay_cursor: ["stream", "last_seq", "updated_at"],
  event_retention: ["id", "pruned_through"],
  overlay_files: ["workspace_id", "path", "repo_id", "content", "sha256", "change", "base_hash", "symbols", "updated_at"],
  claims: ["repo_id", "path", "symbol", "workspace_id", "session_id", "agent_id", "agent_name", "acquired_at", "not_yet_defined"],
  turns: [
    "id", "seq", "session_id", "workspace_id", "repo_id", "client_turn_id", "state", "outcome", "environment_path", "warm",
    "superseded_by", "end_reason", "instance_id", "started_at", "ended_at", "environment_released", "captured_paths", "left_out",
    "exit_code", "exit_signal", "commit_messages",
  ],
  overlay_reads: ["workspace_id", "path", "read_at"],
  changeset_transitions: ["changeset_id", "version", "from_state", "to_state", "reason", "who", "at"],
  comments: ["id", "changeset_id", "repo_id", "path", "line", "body", "author", "created_at", "resolved_by", "resolved_at"],
  verifications: ["id", "changeset_id", "repo_id", "state", "argv", "timeout_seconds", "commit_id", "exit_code", "reason", "output_tail", "started_at", "finished_at", "instance_id"],
} as const;

/** The columns of `Table` a list lacks, and the names it has that `Table` does not: never when it is exact. */
type ColumnMismatch<Table, List extends readonly string[]> = Exclude<keyof Table, List[number]> | Exclude<List[number], keyof Table>;

/** Each list names exactly its interface's columns, or the compiler names the difference. */
type ExactColumns<Lists extends { readonly [T in keyof Database]: readonly string[] }> = {
  readonly [T in keyof Database]: [ColumnMismatch<Database[T], Lists[T]>] extends [never]
    ? readonly string[]
    : { readonly "columns missing from the list, or not in the interface": ColumnMismatch<Database[T], Lists[T]> };
};

/** Every table's column names, in migration order; the same keys as the interfaces (checked at compile time). */
export const TABLE_COLUMNS: { readonly [T in keyof Database]: readonly (keyof Database[T] & string)[] } = COLUMNS satisfies ExactColumns<typeof COLUMNS>;

export function toSeq(value: string | number | bigint): bigint {
  return typeof value === "bigint" ? value : BigInt(value);
}
