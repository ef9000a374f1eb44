import type { GenFile, GenMessage } from "@bufbuild/protobuf/codegenv2";
import type { ChangesetState, FileChange, RepositoryCheck, SymbolChange, TurnOutcome, VerificationState, WorkspaceMode } from "./types_pb.js";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file berth/v1/event.proto.
 */
export declare const file_berth_v1_event: GenFile;
/**
 * A lifecycle event, stored in the same transaction as the change that caused it
 * and delivered to NATS JetStream and to WatchEvents subscribers (see docs/events.md).
 *
 * @generated from message berth.v1.Event
 */
export type Event = Message<"berth.v1.Event"> & {
    /**
     * Strictly increasing in commit order; resume a stream after it.
     *
     * @generated from field: uint64 seq = 1;
     */
    seq: bigint;
    /**
     * UUID, for deduplication (also the JetStream Nats-Msg-Id).
     *
     * @generated from field: string id = 2;
     */
    id: string;
    /**
     * Dotted kind, e.g. "session.stranded".
     *
     * @generated from field: string kind = 3;
     */
    kind: string;
    /**
     * The repository.
     *
     * @generated from field: string repo_id = 4;
     */
    repoId: string;
    /**
     * The session concerned, if any.
     *
     * @generated from field: string session_id = 5;
     */
    sessionId: string;
    /**
     * The workspace concerned, if any.
     *
     * @generated from field: string workspace_id = 6;
     */
    workspaceId: string;
    /**
     * The agent concerned, if any.
     *
     * @generated from field: string agent_id = 7;
     */
    agentId: string;
    /**
     * The changeset concerned, if any.
     *
     * @generated from field: string changeset_id = 8;
     */
    changesetId: string;
    /**
     * When the change was made.
     *
     * @generated from field: google.protobuf.Timestamp occurred_at = 9;
     */
    occurredAt?: Timestamp | undefined;
    /**
     * Why, when the change has a reason.
     *
     * @generated from field: string reason = 10;
     */
    reason: string;
    /**
     * Kind-specific facts.
     *
     * @generated from oneof berth.v1.Event.payload
     */
    payload: {
        /**
         * session.created
         *
         * @generated from field: berth.v1.SessionCreated session_created = 20;
         */
        value: SessionCreated;
        case: "sessionCreated";
    } | {
        /**
         * session.stranded
         *
         * @generated from field: berth.v1.SessionStranded session_stranded = 21;
         */
        value: SessionStranded;
        case: "sessionStranded";
    } | {
        /**
         * session.resumed
         *
         * @generated from field: berth.v1.SessionResumed session_resumed = 22;
         */
        value: SessionResumed;
        case: "sessionResumed";
    } | {
        /**
         * session.abandoned
         *
         * @generated from field: berth.v1.SessionAbandoned session_abandoned = 23;
         */
        value: SessionAbandoned;
        case: "sessionAbandoned";
    } | {
        /**
         * session.destroyed and session.expired
         *
         * @generated from field: berth.v1.SessionEnded session_ended = 24;
         */
        value: SessionEnded;
        case: "sessionEnded";
    } | {
        /**
         * changeset.transitioned
         *
         * @generated from field: berth.v1.ChangesetTransitioned changeset_transitioned = 25;
         */
        value: ChangesetTransitioned;
        case: "changesetTransitioned";
    } | {
        /**
         * file.written and file.deleted
         *
         * @generated from field: berth.v1.FileChanged file_changed = 26;
         */
        value: FileChanged;
        case: "fileChanged";
    } | {
        /**
         * claim.acquired, claim.released and claim.conflict
         *
         * @generated from field: berth.v1.ClaimChanged claim_changed = 27;
         */
        value: ClaimChanged;
        case: "claimChanged";
    } | {
        /**
         * turn.started, turn.superseded, turn.rejected, turn.cancelled, turn.parked and turn.ended
         *
         * @generated from field: berth.v1.TurnChanged turn_changed = 28;
         */
        value: TurnChanged;
        case: "turnChanged";
    } | {
        /**
         * env.evicted
         *
         * @generated from field: berth.v1.EnvironmentEvicted environment_evicted = 29;
         */
        value: EnvironmentEvicted;
        case: "environmentEvicted";
    } | {
        /**
         * turn.capture_failed
         *
         * @generated from field: berth.v1.CaptureFailed capture_failed = 30;
         */
        value: CaptureFailed;
        case: "captureFailed";
    } | {
        /**
         * changeset.committed
         *
         * @generated from field: berth.v1.ChangesetCommitted changeset_committed = 31;
         */
        value: ChangesetCommitted;
        case: "changesetCommitted";
    } | {
        /**
         * changeset.merged
         *
         * @generated from field: berth.v1.ChangesetMerged changeset_merged = 32;
         */
        value: ChangesetMerged;
        case: "changesetMerged";
    } | {
        /**
         * workspace.rebased
         *
         * @generated from field: berth.v1.WorkspaceRebased workspace_rebased = 36;
         */
        value: WorkspaceRebased;
        case: "workspaceRebased";
    } | {
        /**
         * comment.added and comment.resolved
         *
         * @generated from field: berth.v1.CommentChanged comment_changed = 40;
         */
        value: CommentChanged;
        case: "commentChanged";
    } | {
        /**
         * verification.started
         *
         * @generated from field: berth.v1.VerificationStarted verification_started = 44;
         */
        value: VerificationStarted;
        case: "verificationStarted";
    } | {
        /**
         * verification.output
         *
         * @generated from field: berth.v1.VerificationOutput verification_output = 45;
         */
        value: VerificationOutput;
        case: "verificationOutput";
    } | {
        /**
         * verification.finished
         *
         * @generated from field: berth.v1.VerificationFinished verification_finished = 46;
         */
        value: VerificationFinished;
        case: "verificationFinished";
    } | {
        case: undefined;
        value?: undefined;
    };
};
/**
 * Describes the message berth.v1.Event.
 * Use `create(EventSchema)` to create a new message.
 */
export declare const EventSchema: GenMessage<Event>;
/**
 * Payload of session.created.
 *
 * @generated from message berth.v1.SessionCreated
 */
export type SessionCreated = Message<"berth.v1.SessionCreated"> & {
    /**
     * The agent's name.
     *
     * @generated from field: string agent_name = 1;
     */
    agentName: string;
    /**
     * Ephemeral or persistent.
     *
     * @generated from field: berth.v1.WorkspaceMode mode = 2;
     */
    mode: WorkspaceMode;
    /**
     * What the agent set out to do.
     *
     * @generated from field: string intent = 3;
     */
    intent: string;
    /**
     * The base commit.
     *
     * @generated from field: string base_commit = 4;
     */
    baseCommit: string;
};
/**
 * Describes the message berth.v1.SessionCreated.
 * Use `create(SessionCreatedSchema)` to create a new message.
 */
export declare const SessionCreatedSchema: GenMessage<SessionCreated>;
/**
 * Payload of session.stranded.
 *
 * @generated from message berth.v1.SessionStranded
 */
export type SessionStranded = Message<"berth.v1.SessionStranded"> & {
    /**
     * When it was stranded.
     *
     * @generated from field: google.protobuf.Timestamp stranded_at = 1;
     */
    strandedAt?: Timestamp | undefined;
};
/**
 * Describes the message berth.v1.SessionStranded.
 * Use `create(SessionStrandedSchema)` to create a new message.
 */
export declare const SessionStrandedSchema: GenMessage<SessionStranded>;
/**
 * Payload of session.resumed.
 *
 * @generated from message berth.v1.SessionResumed
 */
export type SessionResumed = Message<"berth.v1.SessionResumed"> & {
    /**
     * The session that was stranded.
     *
     * @generated from field: string old_session_id = 1;
     */
    oldSessionId: string;
    /**
     * The session that now owns the workspace.
     *
     * @generated from field: string new_session_id = 2;
     */
    newSessionId: string;
};
/**
 * Describes the message berth.v1.SessionResumed.
 * Use `create(SessionResumedSchema)` to create a new message.
 */
export declare const SessionResumedSchema: GenMessage<SessionResumed>;
/**
 * Payload of session.abandoned.
 *
 * @generated from message berth.v1.SessionAbandoned
 */
export type SessionAbandoned = Message<"berth.v1.SessionAbandoned"> & {
    /**
     * The changeset's state before it was rejected.
     *
     * @generated from field: berth.v1.ChangesetState previous_changeset_state = 1;
     */
    previousChangesetState: ChangesetState;
};
/**
 * Describes the message berth.v1.SessionAbandoned.
 * Use `create(SessionAbandonedSchema)` to create a new message.
 */
export declare const SessionAbandonedSchema: GenMessage<SessionAbandoned>;
/**
 * Payload of session.destroyed and session.expired.
 *
 * @generated from message berth.v1.SessionEnded
 */
export type SessionEnded = Message<"berth.v1.SessionEnded"> & {
    /**
     * Who ended it: "client", "gc_idle", "gc_max_lifetime", "gc_expired", "disconnected".
     *
     * @generated from field: string cause = 1;
     */
    cause: string;
};
/**
 * Describes the message berth.v1.SessionEnded.
 * Use `create(SessionEndedSchema)` to create a new message.
 */
export declare const SessionEndedSchema: GenMessage<SessionEnded>;
/**
 * Payload of changeset.transitioned.
 *
 * @generated from message berth.v1.ChangesetTransitioned
 */
export type ChangesetTransitioned = Message<"berth.v1.ChangesetTransitioned"> & {
    /**
     * State before.
     *
     * @generated from field: berth.v1.ChangesetState from_state = 1;
     */
    fromState: ChangesetState;
    /**
     * State after.
     *
     * @generated from field: berth.v1.ChangesetState to_state = 2;
     */
    toState: ChangesetState;
};
/**
 * Describes the message berth.v1.ChangesetTransitioned.
 * Use `create(ChangesetTransitionedSchema)` to create a new message.
 */
export declare const ChangesetTransitionedSchema: GenMessage<ChangesetTransitioned>;
/**
 * Payload of file.written and file.deleted.
 *
 * @generated from message berth.v1.FileChanged
 */
export type FileChanged = Message<"berth.v1.FileChanged"> & {
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * ADDED, MODIFIED or DELETED.
     *
     * @generated from field: berth.v1.FileChange change = 2;
     */
    change: FileChange;
    /**
     * The symbols changed.
     *
     * @generated from field: repeated berth.v1.SymbolChange symbols = 3;
     */
    symbols: SymbolChange[];
    /**
     * sha256 (hex) of the new content; empty for a delete.
     *
     * @generated from field: string new_hash = 4;
     */
    newHash: string;
};
/**
 * Describes the message berth.v1.FileChanged.
 * Use `create(FileChangedSchema)` to create a new message.
 */
export declare const FileChangedSchema: GenMessage<FileChanged>;
/**
 * Payload of claim.acquired, claim.released and claim.conflict.
 *
 * @generated from message berth.v1.ClaimChanged
 */
export type ClaimChanged = Message<"berth.v1.ClaimChanged"> & {
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * The qualified symbols concerned.
     *
     * @generated from field: repeated string symbols = 2;
     */
    symbols: string[];
    /**
     * claim.conflict: the session holding the claim.
     *
     * @generated from field: string holder_session_id = 3;
     */
    holderSessionId: string;
    /**
     * claim.conflict: the holder's agent name.
     *
     * @generated from field: string holder_agent_name = 4;
     */
    holderAgentName: string;
};
/**
 * Describes the message berth.v1.ClaimChanged.
 * Use `create(ClaimChangedSchema)` to create a new message.
 */
export declare const ClaimChangedSchema: GenMessage<ClaimChanged>;
/**
 * Payload of the turn.* events.
 *
 * @generated from message berth.v1.TurnChanged
 */
export type TurnChanged = Message<"berth.v1.TurnChanged"> & {
    /**
     * The turn.
     *
     * @generated from field: string turn_id = 1;
     */
    turnId: string;
    /**
     * The client's id of the turn, if it gave one.
     *
     * @generated from field: string client_turn_id = 2;
     */
    clientTurnId: string;
    /**
     * turn.superseded: the turn that replaced it; turn.started: the turn it replaced.
     *
     * @generated from field: string other_turn_id = 3;
     */
    otherTurnId: string;
    /**
     * turn.ended and turn.parked: how it ended.
     *
     * @generated from field: berth.v1.TurnOutcome outcome = 4;
     */
    outcome: TurnOutcome;
    /**
     * turn.started: whether the environment was warm.
     *
     * @generated from field: bool warm = 5;
     */
    warm: boolean;
    /**
     * turn.ended and turn.parked: the command's exit status, when EndTurn reported one (Turn.exit_code).
     *
     * @generated from field: optional int32 exit_code = 6;
     */
    exitCode?: number | undefined;
    /**
     * turn.ended and turn.parked: the signal that killed the command, when EndTurn reported one (Turn.exit_signal).
     *
     * @generated from field: string exit_signal = 7;
     */
    exitSignal: string;
};
/**
 * Describes the message berth.v1.TurnChanged.
 * Use `create(TurnChangedSchema)` to create a new message.
 */
export declare const TurnChangedSchema: GenMessage<TurnChanged>;
/**
 * Payload of turn.capture_failed: a turn's environment was to be torn down (its turn
 * superseded, cancelled or failed, its session stranded, the environment expired, the server
 * restarting) and some of its changes could not be captured into the overlay. The directory is
 * kept on the instance's disk at kept_at, never deleted; nothing is lost silently.
 *
 * @generated from message berth.v1.CaptureFailed
 */
export type CaptureFailed = Message<"berth.v1.CaptureFailed"> & {
    /**
     * The environment's directory.
     *
     * @generated from field: string environment_path = 1;
     */
    environmentPath: string;
    /**
     * Where the directory is kept (under BERTH_ENV_ROOT/.unsaved/), empty when it could not be moved.
     *
     * @generated from field: string kept_at = 2;
     */
    keptAt: string;
    /**
     * Why the environment was being torn down (an env.evicted reason).
     *
     * @generated from field: string cause = 3;
     */
    cause: string;
    /**
     * The paths that could not be captured, each with the refusal's reason (e.g. SYMBOL_LOCKED).
     *
     * @generated from field: repeated berth.v1.PathFailure failed = 4;
     */
    failed: PathFailure[];
    /**
     * How many paths were captured all the same.
     *
     * @generated from field: uint32 captured = 5;
     */
    captured: number;
};
/**
 * Describes the message berth.v1.CaptureFailed.
 * Use `create(CaptureFailedSchema)` to create a new message.
 */
export declare const CaptureFailedSchema: GenMessage<CaptureFailed>;
/**
 * One path capture could not write into the overlay.
 *
 * @generated from message berth.v1.PathFailure
 */
export type PathFailure = Message<"berth.v1.PathFailure"> & {
    /**
     * Repository-relative path ("*" when the directory could not be read at all).
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * The refusal's machine-readable reason (e.g. SYMBOL_LOCKED, OVERLAY_QUOTA_EXCEEDED), or the
     * error's message; SUBMODULE or HARDLINK for what capture left out and the overlay cannot hold
     * (LeftOutPath.reason); SESSION_ENDED when the session ended for good before a restart could
     * capture the directory (no overlay to write into).
     *
     * @generated from field: string reason = 2;
     */
    reason: string;
};
/**
 * Describes the message berth.v1.PathFailure.
 * Use `create(PathFailureSchema)` to create a new message.
 */
export declare const PathFailureSchema: GenMessage<PathFailure>;
/**
 * Payload of env.evicted.
 *
 * @generated from message berth.v1.EnvironmentEvicted
 */
export type EnvironmentEvicted = Message<"berth.v1.EnvironmentEvicted"> & {
    /**
     * The environment's directory; empty unless the caller is an admin (or auth is off).
     *
     * @generated from field: string environment_path = 1;
     */
    environmentPath: string;
    /**
     * supersede-busy, pre-acquire, mount-lost, idle-expiry, approval-expiry, capacity, session-ended or rebased.
     *
     * @generated from field: string reason = 2;
     */
    reason: string;
};
/**
 * Describes the message berth.v1.EnvironmentEvicted.
 * Use `create(EnvironmentEvictedSchema)` to create a new message.
 */
export declare const EnvironmentEvictedSchema: GenMessage<EnvironmentEvicted>;
/**
 * Payload of changeset.committed: the changeset's overlay written as a commit.
 *
 * @generated from message berth.v1.ChangesetCommitted
 */
export type ChangesetCommitted = Message<"berth.v1.ChangesetCommitted"> & {
    /**
     * The commit (40 hex digits).
     *
     * @generated from field: string commit_id = 1;
     */
    commitId: string;
    /**
     * The ref that points at it.
     *
     * @generated from field: string ref = 2;
     */
    ref: string;
    /**
     * How many paths the overlay changed.
     *
     * @generated from field: uint32 paths = 3;
     */
    paths: number;
    /**
     * The base commit it was written on.
     *
     * @generated from field: string base_commit = 4;
     */
    baseCommit: string;
};
/**
 * Describes the message berth.v1.ChangesetCommitted.
 * Use `create(ChangesetCommittedSchema)` to create a new message.
 */
export declare const ChangesetCommittedSchema: GenMessage<ChangesetCommitted>;
/**
 * Payload of changeset.merged: the changeset's commit merged into a branch.
 *
 * @generated from message berth.v1.ChangesetMerged
 */
export type ChangesetMerged = Message<"berth.v1.ChangesetMerged"> & {
    /**
     * The full ref merged into.
     *
     * @generated from field: string target_ref = 1;
     */
    targetRef: string;
    /**
     * The target before the merge.
     *
     * @generated from field: string old_commit_id = 2;
     */
    oldCommitId: string;
    /**
     * The target after the merge.
     *
     * @generated from field: string new_commit_id = 3;
     */
    newCommitId: string;
    /**
     * The changeset's commit.
     *
     * @generated from field: string changeset_commit_id = 4;
     */
    changesetCommitId: string;
    /**
     * True when the target only moved forward (no merge commit).
     *
     * @generated from field: bool fast_forward = 5;
     */
    fastForward: boolean;
};
/**
 * Describes the message berth.v1.ChangesetMerged.
 * Use `create(ChangesetMergedSchema)` to create a new message.
 */
export declare const ChangesetMergedSchema: GenMessage<ChangesetMerged>;
/**
 * Payload of workspace.rebased: the workspace moved to a new base commit (RebaseWorkspace).
 *
 * @generated from message berth.v1.WorkspaceRebased
 */
export type WorkspaceRebased = Message<"berth.v1.WorkspaceRebased"> & {
    /**
     * The base commit before.
     *
     * @generated from field: string old_base_commit = 1;
     */
    oldBaseCommit: string;
    /**
     * The base commit after.
     *
     * @generated from field: string new_base_commit = 2;
     */
    newBaseCommit: string;
    /**
     * Paths merged cleanly.
     *
     * @generated from field: repeated string merged = 3;
     */
    merged: string[];
    /**
     * Paths left with conflicts.
     *
     * @generated from field: repeated string conflicted = 4;
     */
    conflicted: string[];
};
/**
 * Describes the message berth.v1.WorkspaceRebased.
 * Use `create(WorkspaceRebasedSchema)` to create a new message.
 */
export declare const WorkspaceRebasedSchema: GenMessage<WorkspaceRebased>;
/**
 * Payload of comment.added and comment.resolved. The body is not carried: the events of a
 * repository reach every agent granted it, the comment only those who may read its changeset
 * (ListComments). The envelope's agent_id is the author (added) or the resolver (resolved).
 *
 * @generated from message berth.v1.CommentChanged
 */
export type CommentChanged = Message<"berth.v1.CommentChanged"> & {
    /**
     * The comment.
     *
     * @generated from field: string comment_id = 1;
     */
    commentId: string;
    /**
     * Its path; empty for a comment on the changeset.
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Its line; 0 for the whole file or the changeset.
     *
     * @generated from field: uint32 line = 3;
     */
    line: number;
};
/**
 * Describes the message berth.v1.CommentChanged.
 * Use `create(CommentChangedSchema)` to create a new message.
 */
export declare const CommentChangedSchema: GenMessage<CommentChanged>;
/**
 * Payload of verification.started: the changeset moved to VERIFYING and its repository's check
 * will run (in the same transaction as the changeset.transitioned).
 *
 * @generated from message berth.v1.VerificationStarted
 */
export type VerificationStarted = Message<"berth.v1.VerificationStarted"> & {
    /**
     * The verification.
     *
     * @generated from field: string verification_id = 1;
     */
    verificationId: string;
    /**
     * The command.
     *
     * @generated from field: berth.v1.RepositoryCheck check = 2;
     */
    check?: RepositoryCheck | undefined;
};
/**
 * Describes the message berth.v1.VerificationStarted.
 * Use `create(VerificationStartedSchema)` to create a new message.
 */
export declare const VerificationStartedSchema: GenMessage<VerificationStarted>;
/**
 * Payload of verification.output: a chunk of a running check's output (stdout and stderr
 * interleaved, at most 4 KiB; after 256 KiB of a run no more are sent, the record keeps the tail).
 *
 * @generated from message berth.v1.VerificationOutput
 */
export type VerificationOutput = Message<"berth.v1.VerificationOutput"> & {
    /**
     * The verification.
     *
     * @generated from field: string verification_id = 1;
     */
    verificationId: string;
    /**
     * The bytes, as the check wrote them.
     *
     * @generated from field: bytes chunk = 2;
     */
    chunk: Uint8Array;
    /**
     * Its offset in the run's output.
     *
     * @generated from field: uint64 offset = 3;
     */
    offset: bigint;
};
/**
 * Describes the message berth.v1.VerificationOutput.
 * Use `create(VerificationOutputSchema)` to create a new message.
 */
export declare const VerificationOutputSchema: GenMessage<VerificationOutput>;
/**
 * Payload of verification.finished (the changeset's move, if any, is its own changeset.transitioned).
 *
 * @generated from message berth.v1.VerificationFinished
 */
export type VerificationFinished = Message<"berth.v1.VerificationFinished"> & {
    /**
     * The verification.
     *
     * @generated from field: string verification_id = 1;
     */
    verificationId: string;
    /**
     * PASSED, FAILED or ERROR.
     *
     * @generated from field: berth.v1.VerificationState state = 2;
     */
    state: VerificationState;
    /**
     * The check's exit status, when it exited.
     *
     * @generated from field: optional int32 exit_code = 3;
     */
    exitCode?: number | undefined;
    /**
     * The last bytes of the output (as Verification.output_tail).
     *
     * @generated from field: string output_tail = 4;
     */
    outputTail: string;
};
/**
 * Describes the message berth.v1.VerificationFinished.
 * Use `create(VerificationFinishedSchema)` to create a new message.
 */
export declare const VerificationFinishedSchema: GenMessage<VerificationFinished>;
