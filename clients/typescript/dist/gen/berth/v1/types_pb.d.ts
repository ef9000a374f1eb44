import type { GenEnum, GenFile, GenMessage } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file berth/v1/types.proto.
 */
export declare const file_berth_v1_types: GenFile;
/**
 * A git repository that agents work on.
 *
 * @generated from message berth.v1.Repository
 */
export type Repository = Message<"berth.v1.Repository"> & {
    /**
     * Server-assigned UUID.
     *
     * @generated from field: string id = 1;
     */
    id: string;
    /**
     * Unique human name, 1–200 characters.
     *
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * Absolute path of a git repository on the server's disk; empty when none was registered,
     * and unless the caller is an admin (or auth is off).
     *
     * @generated from field: string source_path = 3;
     */
    sourcePath: string;
    /**
     * When it was registered.
     *
     * @generated from field: google.protobuf.Timestamp created_at = 4;
     */
    createdAt?: Timestamp | undefined;
    /**
     * Patterns (gitignore syntax, relative to the repository root) a turn's capture leaves out
     * besides what the environment's .gitignore files exclude.
     *
     * @generated from field: repeated string capture_exclude = 5;
     */
    captureExclude: string[];
    /**
     * The git server's URL (file://, git://, ssh://, http(s)://; never with credentials) when the
     * repository was registered with one; empty otherwise, and unless the caller is an admin (or
     * auth is off), as source_path.
     *
     * @generated from field: string remote_url = 6;
     */
    remoteUrl: string;
    /**
     * APPROVED and MERGED must come from a principal other than the changeset's authors: a reviewer
     * or an admin (an author: an agent with a session on the changeset). On by default for
     * repositories registered since it exists; UpdateRepository (admin) changes it. Enforced when auth
     * is on (docs/security.md, "Separation of duties").
     *
     * @generated from field: bool independent_review = 7;
     */
    independentReview: boolean;
    /**
     * The check run when a changeset of this repository moves to VERIFYING (set by an admin with
     * SetRepositoryCheck); unset: none, and VERIFYING is only a state.
     *
     * @generated from field: berth.v1.RepositoryCheck check = 8;
     */
    check?: RepositoryCheck | undefined;
};
/**
 * Describes the message berth.v1.Repository.
 * Use `create(RepositorySchema)` to create a new message.
 */
export declare const RepositorySchema: GenMessage<Repository>;
/**
 * A command run on a changeset's combined tree when it moves to VERIFYING (docs/landing-work.md,
 * "Checks on VERIFYING"): in a fresh directory holding the tree, inside berth run's sandbox, with
 * no network. Exit 0 moves the changeset to APPROVED; anything else back to SUBMITTED.
 *
 * @generated from message berth.v1.RepositoryCheck
 */
export type RepositoryCheck = Message<"berth.v1.RepositoryCheck"> & {
    /**
     * The program and its arguments (no shell: ["sh", "-c", "..."] for one); 1–64 arguments of
     * 1–4096 characters each. The program is looked up on the server's PATH.
     *
     * @generated from field: repeated string argv = 1;
     */
    argv: string[];
    /**
     * How long it may run, in seconds (0: 600; at most 86400); past it, the check is killed and fails.
     *
     * @generated from field: uint32 timeout_seconds = 2;
     */
    timeoutSeconds: number;
};
/**
 * Describes the message berth.v1.RepositoryCheck.
 * Use `create(RepositoryCheckSchema)` to create a new message.
 */
export declare const RepositoryCheckSchema: GenMessage<RepositoryCheck>;
/**
 * One run of a repository's check on a changeset (ListVerifications).
 *
 * @generated from message berth.v1.Verification
 */
export type Verification = Message<"berth.v1.Verification"> & {
    /**
     * Server-assigned UUID.
     *
     * @generated from field: string id = 1;
     */
    id: string;
    /**
     * The changeset checked.
     *
     * @generated from field: string changeset_id = 2;
     */
    changesetId: string;
    /**
     * Where the run is.
     *
     * @generated from field: berth.v1.VerificationState state = 3;
     */
    state: VerificationState;
    /**
     * The check's exit status, when it exited (absent while running, on a timeout or an error).
     *
     * @generated from field: optional int32 exit_code = 4;
     */
    exitCode?: number | undefined;
    /**
     * The last bytes (at most 16 KiB) of its output, stdout and stderr interleaved, as UTF-8.
     *
     * @generated from field: string output_tail = 5;
     */
    outputTail: string;
    /**
     * When it started (the transition to VERIFYING).
     *
     * @generated from field: google.protobuf.Timestamp started_at = 6;
     */
    startedAt?: Timestamp | undefined;
    /**
     * When it finished; unset while RUNNING.
     *
     * @generated from field: google.protobuf.Timestamp finished_at = 7;
     */
    finishedAt?: Timestamp | undefined;
    /**
     * The name of the instance that ran it.
     *
     * @generated from field: string instance = 8;
     */
    instance: string;
    /**
     * Why it ended so: "exit 0", "exit 3", "timeout after 30s", "instance_lost", ….
     *
     * @generated from field: string reason = 9;
     */
    reason: string;
    /**
     * The changeset's commit (CommitChangeset's) the check ran on, once built.
     *
     * @generated from field: string commit_id = 10;
     */
    commitId: string;
    /**
     * The command run.
     *
     * @generated from field: berth.v1.RepositoryCheck check = 11;
     */
    check?: RepositoryCheck | undefined;
};
/**
 * Describes the message berth.v1.Verification.
 * Use `create(VerificationSchema)` to create a new message.
 */
export declare const VerificationSchema: GenMessage<Verification>;
/**
 * A changeset: the unit of work a workspace produces.
 *
 * @generated from message berth.v1.Changeset
 */
export type Changeset = Message<"berth.v1.Changeset"> & {
    /**
     * UUID.
     *
     * @generated from field: string id = 1;
     */
    id: string;
    /**
     * The repository it belongs to.
     *
     * @generated from field: string repo_id = 2;
     */
    repoId: string;
    /**
     * Current state.
     *
     * @generated from field: berth.v1.ChangesetState state = 3;
     */
    state: ChangesetState;
    /**
     * Reason given with the last transition.
     *
     * @generated from field: string reason = 4;
     */
    reason: string;
    /**
     * When it was created.
     *
     * @generated from field: google.protobuf.Timestamp created_at = 5;
     */
    createdAt?: Timestamp | undefined;
    /**
     * When it last changed state.
     *
     * @generated from field: google.protobuf.Timestamp updated_at = 6;
     */
    updatedAt?: Timestamp | undefined;
    /**
     * The commit CommitChangeset (or the merge) last wrote for it; empty before.
     *
     * @generated from field: string commit_id = 7;
     */
    commitId: string;
    /**
     * When that commit was recorded.
     *
     * @generated from field: google.protobuf.Timestamp committed_at = 8;
     */
    committedAt?: Timestamp | undefined;
};
/**
 * Describes the message berth.v1.Changeset.
 * Use `create(ChangesetSchema)` to create a new message.
 */
export declare const ChangesetSchema: GenMessage<Changeset>;
/**
 * A review comment on a changeset (AddComment), on a path of it, or on a line of a path.
 *
 * @generated from message berth.v1.Comment
 */
export type Comment = Message<"berth.v1.Comment"> & {
    /**
     * UUID.
     *
     * @generated from field: string id = 1;
     */
    id: string;
    /**
     * The changeset it is on.
     *
     * @generated from field: string changeset_id = 2;
     */
    changesetId: string;
    /**
     * Repository-relative path; empty: the comment is on the changeset as a whole.
     *
     * @generated from field: string path = 3;
     */
    path: string;
    /**
     * Line of `path` in the new file's lines of the changeset's diff (1 is the first); 0: the whole file.
     *
     * @generated from field: uint32 line = 4;
     */
    line: number;
    /**
     * The text.
     *
     * @generated from field: string body = 5;
     */
    body: string;
    /**
     * Who wrote it: the caller's agent id (with auth off, "anonymous").
     *
     * @generated from field: string author = 6;
     */
    author: string;
    /**
     * When it was written.
     *
     * @generated from field: google.protobuf.Timestamp created_at = 7;
     */
    createdAt?: Timestamp | undefined;
    /**
     * Whether it was resolved (by the agent that acted on it, or a reviewer).
     *
     * @generated from field: bool resolved = 8;
     */
    resolved: boolean;
    /**
     * Who resolved it; empty while open.
     *
     * @generated from field: string resolved_by = 9;
     */
    resolvedBy: string;
    /**
     * When it was resolved; unset while open.
     *
     * @generated from field: google.protobuf.Timestamp resolved_at = 10;
     */
    resolvedAt?: Timestamp | undefined;
};
/**
 * Describes the message berth.v1.Comment.
 * Use `create(CommentSchema)` to create a new message.
 */
export declare const CommentSchema: GenMessage<Comment>;
/**
 * A session's workspace: an overlay of file changes on a base commit, tied to a changeset.
 *
 * @generated from message berth.v1.Workspace
 */
export type Workspace = Message<"berth.v1.Workspace"> & {
    /**
     * Stable UUID of the workspace; it survives a resume.
     *
     * @generated from field: string workspace_id = 1;
     */
    workspaceId: string;
    /**
     * UUID of the session that currently owns it; a resume moves it.
     *
     * @generated from field: string session_id = 2;
     */
    sessionId: string;
    /**
     * The repository.
     *
     * @generated from field: string repo_id = 3;
     */
    repoId: string;
    /**
     * The agent's identity.
     *
     * @generated from field: string agent_id = 4;
     */
    agentId: string;
    /**
     * The agent's name in this repository (agent-1, agent-2, …).
     *
     * @generated from field: string agent_name = 5;
     */
    agentName: string;
    /**
     * The changeset.
     *
     * @generated from field: string changeset_id = 6;
     */
    changesetId: string;
    /**
     * The changeset's state.
     *
     * @generated from field: berth.v1.ChangesetState changeset_state = 7;
     */
    changesetState: ChangesetState;
    /**
     * What the agent set out to do.
     *
     * @generated from field: string intent = 8;
     */
    intent: string;
    /**
     * The commit the overlay applies to.
     *
     * @generated from field: string base_commit = 9;
     */
    baseCommit: string;
    /**
     * Ephemeral or persistent.
     *
     * @generated from field: berth.v1.WorkspaceMode mode = 10;
     */
    mode: WorkspaceMode;
    /**
     * Persistent workspaces only: when it expires.
     *
     * @generated from field: google.protobuf.Timestamp expires_at = 11;
     */
    expiresAt?: Timestamp | undefined;
    /**
     * When it was created.
     *
     * @generated from field: google.protobuf.Timestamp created_at = 12;
     */
    createdAt?: Timestamp | undefined;
    /**
     * When its session last called an RPC or heartbeat.
     *
     * @generated from field: google.protobuf.Timestamp last_active_at = 13;
     */
    lastActiveAt?: Timestamp | undefined;
    /**
     * Lifecycle state.
     *
     * @generated from field: berth.v1.LifecycleState lifecycle_state = 14;
     */
    lifecycleState: LifecycleState;
    /**
     * When it was stranded (stranded workspaces only).
     *
     * @generated from field: google.protobuf.Timestamp stranded_at = 15;
     */
    strandedAt?: Timestamp | undefined;
    /**
     * Why it was stranded or abandoned.
     *
     * @generated from field: string lifecycle_reason = 16;
     */
    lifecycleReason: string;
    /**
     * The session it was resumed from, if any.
     *
     * @generated from field: string resumed_from_session_id = 17;
     */
    resumedFromSessionId: string;
};
/**
 * Describes the message berth.v1.Workspace.
 * Use `create(WorkspaceSchema)` to create a new message.
 */
export declare const WorkspaceSchema: GenMessage<Workspace>;
/**
 * A session of a repository, as listed by ListSessions.
 *
 * @generated from message berth.v1.SessionInfo
 */
export type SessionInfo = Message<"berth.v1.SessionInfo"> & {
    /**
     * The session.
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * The workspace.
     *
     * @generated from field: string workspace_id = 2;
     */
    workspaceId: string;
    /**
     * The agent's identity.
     *
     * @generated from field: string agent_id = 3;
     */
    agentId: string;
    /**
     * The agent's name in this repository.
     *
     * @generated from field: string agent_name = 4;
     */
    agentName: string;
    /**
     * What the agent set out to do.
     *
     * @generated from field: string intent = 5;
     */
    intent: string;
    /**
     * The changeset.
     *
     * @generated from field: string changeset_id = 6;
     */
    changesetId: string;
    /**
     * The changeset's state.
     *
     * @generated from field: berth.v1.ChangesetState changeset_state = 7;
     */
    changesetState: ChangesetState;
    /**
     * Ephemeral or persistent.
     *
     * @generated from field: berth.v1.WorkspaceMode mode = 8;
     */
    mode: WorkspaceMode;
    /**
     * When it was created.
     *
     * @generated from field: google.protobuf.Timestamp created_at = 9;
     */
    createdAt?: Timestamp | undefined;
    /**
     * When its session was last active.
     *
     * @generated from field: google.protobuf.Timestamp last_active_at = 10;
     */
    lastActiveAt?: Timestamp | undefined;
    /**
     * Lifecycle state.
     *
     * @generated from field: berth.v1.LifecycleState lifecycle_state = 11;
     */
    lifecycleState: LifecycleState;
    /**
     * When it was stranded (stranded sessions only).
     *
     * @generated from field: google.protobuf.Timestamp stranded_at = 20;
     */
    strandedAt?: Timestamp | undefined;
    /**
     * Why it was stranded or abandoned.
     *
     * @generated from field: string lifecycle_reason = 21;
     */
    lifecycleReason: string;
    /**
     * The commit its overlay applies to.
     *
     * @generated from field: string base_commit = 22;
     */
    baseCommit: string;
};
/**
 * Describes the message berth.v1.SessionInfo.
 * Use `create(SessionInfoSchema)` to create a new message.
 */
export declare const SessionInfoSchema: GenMessage<SessionInfo>;
/**
 * A symbol a write added, modified or deleted.
 *
 * @generated from message berth.v1.SymbolChange
 */
export type SymbolChange = Message<"berth.v1.SymbolChange"> & {
    /**
     * Qualified name, e.g. "TaskService.create_task"; the path itself for a file without symbols.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * function, method, class, interface, type, enum, struct, trait, impl, module, const, variable, macro or file.
     *
     * @generated from field: string kind = 2;
     */
    kind: string;
    /**
     * How it changed.
     *
     * @generated from field: berth.v1.SymbolChangeKind change = 3;
     */
    change: SymbolChangeKind;
};
/**
 * Describes the message berth.v1.SymbolChange.
 * Use `create(SymbolChangeSchema)` to create a new message.
 */
export declare const SymbolChangeSchema: GenMessage<SymbolChange>;
/**
 * Where a verification is.
 *
 * @generated from enum berth.v1.VerificationState
 */
export declare enum VerificationState {
    /**
     * Not set.
     *
     * @generated from enum value: VERIFICATION_STATE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * The check is running.
     *
     * @generated from enum value: VERIFICATION_STATE_RUNNING = 1;
     */
    RUNNING = 1,
    /**
     * It exited 0; the changeset moved to APPROVED.
     *
     * @generated from enum value: VERIFICATION_STATE_PASSED = 2;
     */
    PASSED = 2,
    /**
     * It exited non-zero or timed out; the changeset moved back to SUBMITTED.
     *
     * @generated from enum value: VERIFICATION_STATE_FAILED = 3;
     */
    FAILED = 3,
    /**
     * It could not run to the end (no sandbox, the tree could not be built, the instance running
     * it died); the changeset moved back to SUBMITTED.
     *
     * @generated from enum value: VERIFICATION_STATE_ERROR = 4;
     */
    ERROR = 4
}
/**
 * Describes the enum berth.v1.VerificationState.
 */
export declare const VerificationStateSchema: GenEnum<VerificationState>;
/**
 * How long a workspace lives.
 *
 * @generated from enum berth.v1.WorkspaceMode
 */
export declare enum WorkspaceMode {
    /**
     * Not set; rejected.
     *
     * @generated from enum value: WORKSPACE_MODE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Lives while its session is connected.
     *
     * @generated from enum value: WORKSPACE_MODE_EPHEMERAL = 1;
     */
    EPHEMERAL = 1,
    /**
     * Lives until its expires_at, whether or not its session is connected.
     *
     * @generated from enum value: WORKSPACE_MODE_PERSISTENT = 2;
     */
    PERSISTENT = 2
}
/**
 * Describes the enum berth.v1.WorkspaceMode.
 */
export declare const WorkspaceModeSchema: GenEnum<WorkspaceMode>;
/**
 * The state of a changeset. MERGED, REJECTED and CLOSED are terminal.
 *
 * @generated from enum berth.v1.ChangesetState
 */
export declare enum ChangesetState {
    /**
     * Not set; rejected.
     *
     * @generated from enum value: CHANGESET_STATE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Being edited.
     *
     * @generated from enum value: CHANGESET_STATE_DRAFT = 1;
     */
    DRAFT = 1,
    /**
     * Handed in for verification.
     *
     * @generated from enum value: CHANGESET_STATE_SUBMITTED = 2;
     */
    SUBMITTED = 2,
    /**
     * Being verified.
     *
     * @generated from enum value: CHANGESET_STATE_VERIFYING = 3;
     */
    VERIFYING = 3,
    /**
     * Verified; may be merged.
     *
     * @generated from enum value: CHANGESET_STATE_APPROVED = 4;
     */
    APPROVED = 4,
    /**
     * Terminal: verification failed or the session was abandoned.
     *
     * @generated from enum value: CHANGESET_STATE_REJECTED = 5;
     */
    REJECTED = 5,
    /**
     * Terminal: merged.
     *
     * @generated from enum value: CHANGESET_STATE_MERGED = 6;
     */
    MERGED = 6,
    /**
     * Terminal: closed without merging.
     *
     * @generated from enum value: CHANGESET_STATE_CLOSED = 7;
     */
    CLOSED = 7
}
/**
 * Describes the enum berth.v1.ChangesetState.
 */
export declare const ChangesetStateSchema: GenEnum<ChangesetState>;
/**
 * Where a workspace is in its lifecycle (see docs/lifecycle.md).
 *
 * @generated from enum berth.v1.LifecycleState
 */
export declare enum LifecycleState {
    /**
     * Not set.
     *
     * @generated from enum value: LIFECYCLE_STATE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Its session is usable.
     *
     * @generated from enum value: LIFECYCLE_STATE_ACTIVE = 1;
     */
    ACTIVE = 1,
    /**
     * Its agent went away with unfinished work; ResumeSession brings it back.
     *
     * @generated from enum value: LIFECYCLE_STATE_STRANDED = 2;
     */
    STRANDED = 2,
    /**
     * Terminal: its changeset was rejected and its overlay deleted.
     *
     * @generated from enum value: LIFECYCLE_STATE_ABANDONED = 3;
     */
    ABANDONED = 3,
    /**
     * Terminal: destroyed by its agent, by expiry or by GC.
     *
     * @generated from enum value: LIFECYCLE_STATE_DESTROYED = 4;
     */
    DESTROYED = 4
}
/**
 * Describes the enum berth.v1.LifecycleState.
 */
export declare const LifecycleStateSchema: GenEnum<LifecycleState>;
/**
 * How a turn ended.
 *
 * @generated from enum berth.v1.TurnOutcome
 */
export declare enum TurnOutcome {
    /**
     * Not set.
     *
     * @generated from enum value: TURN_OUTCOME_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Done: the environment is parked idle.
     *
     * @generated from enum value: TURN_OUTCOME_COMPLETED = 1;
     */
    COMPLETED = 1,
    /**
     * Waiting for a person's approval: the environment is parked for BERTH_ENV_APPROVAL_TTL_MS.
     *
     * @generated from enum value: TURN_OUTCOME_AWAITING_APPROVAL = 2;
     */
    AWAITING_APPROVAL = 2,
    /**
     * Failed: the environment is torn down (after its changes are captured).
     *
     * @generated from enum value: TURN_OUTCOME_FAILED = 3;
     */
    FAILED = 3
}
/**
 * Describes the enum berth.v1.TurnOutcome.
 */
export declare const TurnOutcomeSchema: GenEnum<TurnOutcome>;
/**
 * How a write changed a file.
 *
 * @generated from enum berth.v1.FileChange
 */
export declare enum FileChange {
    /**
     * Not set.
     *
     * @generated from enum value: FILE_CHANGE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * The file did not exist in the base or the overlay.
     *
     * @generated from enum value: FILE_CHANGE_ADDED = 1;
     */
    ADDED = 1,
    /**
     * The file existed and now has other content.
     *
     * @generated from enum value: FILE_CHANGE_MODIFIED = 2;
     */
    MODIFIED = 2,
    /**
     * The file was deleted.
     *
     * @generated from enum value: FILE_CHANGE_DELETED = 3;
     */
    DELETED = 3
}
/**
 * Describes the enum berth.v1.FileChange.
 */
export declare const FileChangeSchema: GenEnum<FileChange>;
/**
 * Where a file's content comes from.
 *
 * @generated from enum berth.v1.FileSource
 */
export declare enum FileSource {
    /**
     * Not set.
     *
     * @generated from enum value: FILE_SOURCE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * The session's overlay.
     *
     * @generated from enum value: FILE_SOURCE_OVERLAY = 1;
     */
    OVERLAY = 1,
    /**
     * The repository's source at the workspace's base commit.
     *
     * @generated from enum value: FILE_SOURCE_BASE = 2;
     */
    BASE = 2
}
/**
 * Describes the enum berth.v1.FileSource.
 */
export declare const FileSourceSchema: GenEnum<FileSource>;
/**
 * How a symbol changed.
 *
 * @generated from enum berth.v1.SymbolChangeKind
 */
export declare enum SymbolChangeKind {
    /**
     * Not set.
     *
     * @generated from enum value: SYMBOL_CHANGE_KIND_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * New in this write.
     *
     * @generated from enum value: SYMBOL_CHANGE_KIND_ADDED = 1;
     */
    ADDED = 1,
    /**
     * Its text changed.
     *
     * @generated from enum value: SYMBOL_CHANGE_KIND_MODIFIED = 2;
     */
    MODIFIED = 2,
    /**
     * Removed by this write.
     *
     * @generated from enum value: SYMBOL_CHANGE_KIND_DELETED = 3;
     */
    DELETED = 3
}
/**
 * Describes the enum berth.v1.SymbolChangeKind.
 */
export declare const SymbolChangeKindSchema: GenEnum<SymbolChangeKind>;
