import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Event } from "./event_pb.js";
import type { Changeset, ChangesetState, Comment, FileChange, FileSource, LifecycleState, Repository, RepositoryCheck, SessionInfo, SymbolChange, Verification, Workspace, WorkspaceMode } from "./types_pb.js";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file berth/v1/workspace_service.proto.
 */
export declare const file_berth_v1_workspace_service: GenFile;
/**
 * Request of RegisterRepository.
 *
 * @generated from message berth.v1.RegisterRepositoryRequest
 */
export type RegisterRepositoryRequest = Message<"berth.v1.RegisterRepositoryRequest"> & {
    /**
     * Unique name, 1–200 characters.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * Optional absolute path of a git repository on the server's disk. At most one of source_path
     * and remote_url.
     *
     * @generated from field: string source_path = 2;
     */
    sourcePath: string;
    /**
     * Optional patterns (gitignore syntax, relative to the repository root; at most 100, each 1–200
     * characters) a turn's capture leaves out besides the environment's .gitignore files.
     *
     * @generated from field: repeated string capture_exclude = 3;
     */
    captureExclude: string[];
    /**
     * Optional client-chosen id of this call (1–200 characters, e.g. a UUID), to retry it safely: a
     * retry with the same request_id, name, source_path and capture_exclude after a registration
     * that succeeded is answered with that repository instead of ALREADY_EXISTS.
     *
     * @generated from field: string request_id = 4;
     */
    requestId: string;
    /**
     * Optional URL of the repository on a git server (file://, git://, ssh://, http:// or
     * https://), instead of a source_path: every instance keeps a mirror of its own under its data
     * directory, fetches from it and lands work by pushing to it. Contacted at registration
     * (UNAVAILABLE REMOTE_UNREACHABLE when it cannot be reached). A URL holding credentials (a
     * password; any user name but ssh's) is INVALID_ARGUMENT: the server's own environment provides
     * them (docs/security.md). A retry with the same request_id must name the same URL.
     *
     * @generated from field: string remote_url = 5;
     */
    remoteUrl: string;
    /**
     * Repository.independent_review of the new repository; default true (set false to opt out).
     *
     * @generated from field: optional bool independent_review = 6;
     */
    independentReview?: boolean | undefined;
};
/**
 * Describes the message berth.v1.RegisterRepositoryRequest.
 * Use `create(RegisterRepositoryRequestSchema)` to create a new message.
 */
export declare const RegisterRepositoryRequestSchema: GenMessage<RegisterRepositoryRequest>;
/**
 * Request of UpdateRepository.
 *
 * @generated from message berth.v1.UpdateRepositoryRequest
 */
export type UpdateRepositoryRequest = Message<"berth.v1.UpdateRepositoryRequest"> & {
    /**
     * The repository (UUID).
     *
     * @generated from field: string repository_id = 1;
     */
    repositoryId: string;
    /**
     * When set, the new Repository.independent_review.
     *
     * @generated from field: optional bool independent_review = 2;
     */
    independentReview?: boolean | undefined;
};
/**
 * Describes the message berth.v1.UpdateRepositoryRequest.
 * Use `create(UpdateRepositoryRequestSchema)` to create a new message.
 */
export declare const UpdateRepositoryRequestSchema: GenMessage<UpdateRepositoryRequest>;
/**
 * Response of UpdateRepository.
 *
 * @generated from message berth.v1.UpdateRepositoryResponse
 */
export type UpdateRepositoryResponse = Message<"berth.v1.UpdateRepositoryResponse"> & {
    /**
     * The repository as it now is.
     *
     * @generated from field: berth.v1.Repository repository = 1;
     */
    repository?: Repository | undefined;
};
/**
 * Describes the message berth.v1.UpdateRepositoryResponse.
 * Use `create(UpdateRepositoryResponseSchema)` to create a new message.
 */
export declare const UpdateRepositoryResponseSchema: GenMessage<UpdateRepositoryResponse>;
/**
 * Response of RegisterRepository.
 *
 * @generated from message berth.v1.RegisterRepositoryResponse
 */
export type RegisterRepositoryResponse = Message<"berth.v1.RegisterRepositoryResponse"> & {
    /**
     * The repository.
     *
     * @generated from field: berth.v1.Repository repository = 1;
     */
    repository?: Repository | undefined;
};
/**
 * Describes the message berth.v1.RegisterRepositoryResponse.
 * Use `create(RegisterRepositoryResponseSchema)` to create a new message.
 */
export declare const RegisterRepositoryResponseSchema: GenMessage<RegisterRepositoryResponse>;
/**
 * Request of ListRepositories.
 *
 * @generated from message berth.v1.ListRepositoriesRequest
 */
export type ListRepositoriesRequest = Message<"berth.v1.ListRepositoriesRequest"> & {
    /**
     * At most this many repositories (0: the default, 100; at most 1000, more is INVALID_ARGUMENT).
     *
     * @generated from field: uint32 page_size = 20;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page; empty for the first.
     *
     * @generated from field: string page_token = 21;
     */
    pageToken: string;
};
/**
 * Describes the message berth.v1.ListRepositoriesRequest.
 * Use `create(ListRepositoriesRequestSchema)` to create a new message.
 */
export declare const ListRepositoriesRequestSchema: GenMessage<ListRepositoriesRequest>;
/**
 * Response of ListRepositories.
 *
 * @generated from message berth.v1.ListRepositoriesResponse
 */
export type ListRepositoriesResponse = Message<"berth.v1.ListRepositoriesResponse"> & {
    /**
     * The page's repositories, by name.
     *
     * @generated from field: repeated berth.v1.Repository repositories = 1;
     */
    repositories: Repository[];
    /**
     * Pass as page_token to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 20;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListRepositoriesResponse.
 * Use `create(ListRepositoriesResponseSchema)` to create a new message.
 */
export declare const ListRepositoriesResponseSchema: GenMessage<ListRepositoriesResponse>;
/**
 * Request of CreateWorkspace.
 *
 * @generated from message berth.v1.CreateWorkspaceRequest
 */
export type CreateWorkspaceRequest = Message<"berth.v1.CreateWorkspaceRequest"> & {
    /**
     * The repository (UUID).
     *
     * @generated from field: string repo_id = 1;
     */
    repoId: string;
    /**
     * What the agent sets out to do, at most 4096 characters.
     *
     * @generated from field: string intent = 2;
     */
    intent: string;
    /**
     * The commit the overlay applies to (a git object name or ref, at most 256 characters).
     *
     * @generated from field: string base_commit = 3;
     */
    baseCommit: string;
    /**
     * Ephemeral or persistent; required.
     *
     * @generated from field: berth.v1.WorkspaceMode mode = 4;
     */
    mode: WorkspaceMode;
    /**
     * Persistent only: lifetime in seconds (default 86400, at most 30 days).
     *
     * @generated from field: optional uint32 ttl_seconds = 5;
     */
    ttlSeconds?: number | undefined;
    /**
     * The agent's identity; with auth on it defaults to (and must equal) the caller's.
     *
     * @generated from field: string agent_id = 6;
     */
    agentId: string;
    /**
     * The agent's name; when empty the next agent-N of the repository is assigned.
     *
     * @generated from field: string agent_name = 7;
     */
    agentName: string;
    /**
     * The session id (UUID); minted when empty.
     *
     * @generated from field: string session_id = 8;
     */
    sessionId: string;
    /**
     * An existing changeset of the repository (UUID); a DRAFT one is created when empty. With auth
     * on, only an agent that has or had a session on it (or an admin) may join it.
     *
     * @generated from field: string changeset_id = 9;
     */
    changesetId: string;
    /**
     * Optional client-chosen id of this call (1–200 characters, e.g. a UUID), to retry it safely:
     * a retry by the same agent in the same repository with the same request_id and settings is
     * answered with the workspace the first call made (as it is now), instead of a second workspace
     * or ALREADY_EXISTS; with other settings it is ALREADY_EXISTS REQUEST_ID_REUSED.
     *
     * @generated from field: string request_id = 10;
     */
    requestId: string;
};
/**
 * Describes the message berth.v1.CreateWorkspaceRequest.
 * Use `create(CreateWorkspaceRequestSchema)` to create a new message.
 */
export declare const CreateWorkspaceRequestSchema: GenMessage<CreateWorkspaceRequest>;
/**
 * Response of CreateWorkspace.
 *
 * @generated from message berth.v1.CreateWorkspaceResponse
 */
export type CreateWorkspaceResponse = Message<"berth.v1.CreateWorkspaceResponse"> & {
    /**
     * The workspace.
     *
     * @generated from field: berth.v1.Workspace workspace = 1;
     */
    workspace?: Workspace | undefined;
};
/**
 * Describes the message berth.v1.CreateWorkspaceResponse.
 * Use `create(CreateWorkspaceResponseSchema)` to create a new message.
 */
export declare const CreateWorkspaceResponseSchema: GenMessage<CreateWorkspaceResponse>;
/**
 * Request of GetWorkspace.
 *
 * @generated from message berth.v1.GetWorkspaceRequest
 */
export type GetWorkspaceRequest = Message<"berth.v1.GetWorkspaceRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
};
/**
 * Describes the message berth.v1.GetWorkspaceRequest.
 * Use `create(GetWorkspaceRequestSchema)` to create a new message.
 */
export declare const GetWorkspaceRequestSchema: GenMessage<GetWorkspaceRequest>;
/**
 * Response of GetWorkspace.
 *
 * @generated from message berth.v1.GetWorkspaceResponse
 */
export type GetWorkspaceResponse = Message<"berth.v1.GetWorkspaceResponse"> & {
    /**
     * The workspace.
     *
     * @generated from field: berth.v1.Workspace workspace = 1;
     */
    workspace?: Workspace | undefined;
};
/**
 * Describes the message berth.v1.GetWorkspaceResponse.
 * Use `create(GetWorkspaceResponseSchema)` to create a new message.
 */
export declare const GetWorkspaceResponseSchema: GenMessage<GetWorkspaceResponse>;
/**
 * Request of DestroyWorkspace.
 *
 * @generated from message berth.v1.DestroyWorkspaceRequest
 */
export type DestroyWorkspaceRequest = Message<"berth.v1.DestroyWorkspaceRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
};
/**
 * Describes the message berth.v1.DestroyWorkspaceRequest.
 * Use `create(DestroyWorkspaceRequestSchema)` to create a new message.
 */
export declare const DestroyWorkspaceRequestSchema: GenMessage<DestroyWorkspaceRequest>;
/**
 * Response of DestroyWorkspace.
 *
 * @generated from message berth.v1.DestroyWorkspaceResponse
 */
export type DestroyWorkspaceResponse = Message<"berth.v1.DestroyWorkspaceResponse"> & {
    /**
     * The workspace as it was destroyed.
     *
     * @generated from field: berth.v1.Workspace workspace = 1;
     */
    workspace?: Workspace | undefined;
};
/**
 * Describes the message berth.v1.DestroyWorkspaceResponse.
 * Use `create(DestroyWorkspaceResponseSchema)` to create a new message.
 */
export declare const DestroyWorkspaceResponseSchema: GenMessage<DestroyWorkspaceResponse>;
/**
 * Request of ListSessions.
 *
 * @generated from message berth.v1.ListSessionsRequest
 */
export type ListSessionsRequest = Message<"berth.v1.ListSessionsRequest"> & {
    /**
     * The repository (UUID).
     *
     * @generated from field: string repo_id = 1;
     */
    repoId: string;
    /**
     * At most this many sessions (0: the default, 100; at most 1000, more is INVALID_ARGUMENT).
     *
     * @generated from field: uint32 page_size = 20;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page; empty for the first.
     *
     * @generated from field: string page_token = 21;
     */
    pageToken: string;
    /**
     * Only sessions in these states (ACTIVE, STRANDED, ABANDONED); empty: ACTIVE and STRANDED.
     *
     * @generated from field: repeated berth.v1.LifecycleState states = 22;
     */
    states: LifecycleState[];
};
/**
 * Describes the message berth.v1.ListSessionsRequest.
 * Use `create(ListSessionsRequestSchema)` to create a new message.
 */
export declare const ListSessionsRequestSchema: GenMessage<ListSessionsRequest>;
/**
 * Response of ListSessions.
 *
 * @generated from message berth.v1.ListSessionsResponse
 */
export type ListSessionsResponse = Message<"berth.v1.ListSessionsResponse"> & {
    /**
     * The page's sessions, oldest first (a session keeps its place when it is stranded or resumed).
     *
     * @generated from field: repeated berth.v1.SessionInfo sessions = 1;
     */
    sessions: SessionInfo[];
    /**
     * Pass as page_token to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 20;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListSessionsResponse.
 * Use `create(ListSessionsResponseSchema)` to create a new message.
 */
export declare const ListSessionsResponseSchema: GenMessage<ListSessionsResponse>;
/**
 * Request of CountActive.
 *
 * @generated from message berth.v1.CountActiveRequest
 */
export type CountActiveRequest = Message<"berth.v1.CountActiveRequest"> & {
    /**
     * Optional repository (UUID).
     *
     * @generated from field: string repo_id = 1;
     */
    repoId: string;
};
/**
 * Describes the message berth.v1.CountActiveRequest.
 * Use `create(CountActiveRequestSchema)` to create a new message.
 */
export declare const CountActiveRequestSchema: GenMessage<CountActiveRequest>;
/**
 * Response of CountActive.
 *
 * @generated from message berth.v1.CountActiveResponse
 */
export type CountActiveResponse = Message<"berth.v1.CountActiveResponse"> & {
    /**
     * Live sessions of the repository (0 without repo_id).
     *
     * @generated from field: uint32 active = 1;
     */
    active: number;
    /**
     * Live sessions of every repository.
     *
     * @generated from field: uint32 total = 2;
     */
    total: number;
};
/**
 * Describes the message berth.v1.CountActiveResponse.
 * Use `create(CountActiveResponseSchema)` to create a new message.
 */
export declare const CountActiveResponseSchema: GenMessage<CountActiveResponse>;
/**
 * Request of TransitionChangeset.
 *
 * @generated from message berth.v1.TransitionChangesetRequest
 */
export type TransitionChangesetRequest = Message<"berth.v1.TransitionChangesetRequest"> & {
    /**
     * The changeset (UUID).
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
    /**
     * The state to move to.
     *
     * @generated from field: berth.v1.ChangesetState to_state = 2;
     */
    toState: ChangesetState;
    /**
     * Optional reason, at most 1024 characters.
     *
     * @generated from field: string reason = 3;
     */
    reason: string;
    /**
     * MERGED only: the branch the changeset's commit is merged into (a full ref such as
     * refs/heads/main, or a branch name); empty: the branch HEAD names in the source repository.
     *
     * @generated from field: string target_ref = 4;
     */
    targetRef: string;
    /**
     * Optional compare-and-set: the state the caller believes the changeset is in. When set, the
     * transition happens only from this state (else FAILED_PRECONDITION STATE_MISMATCH), and a
     * changeset already in `to_state` is answered as it is with `unchanged` (a retry after success
     * is not an error). Unset: any state `to_state` may be reached from.
     *
     * @generated from field: berth.v1.ChangesetState expected_state = 5;
     */
    expectedState: ChangesetState;
};
/**
 * Describes the message berth.v1.TransitionChangesetRequest.
 * Use `create(TransitionChangesetRequestSchema)` to create a new message.
 */
export declare const TransitionChangesetRequestSchema: GenMessage<TransitionChangesetRequest>;
/**
 * Response of TransitionChangeset.
 *
 * @generated from message berth.v1.TransitionChangesetResponse
 */
export type TransitionChangesetResponse = Message<"berth.v1.TransitionChangesetResponse"> & {
    /**
     * The changeset after the transition.
     *
     * @generated from field: berth.v1.Changeset changeset = 1;
     */
    changeset?: Changeset | undefined;
    /**
     * MERGED only: what the merge did to the target.
     *
     * @generated from field: berth.v1.MergeOutcome merge = 2;
     */
    merge?: MergeOutcome | undefined;
    /**
     * True when `expected_state` was set and the changeset was already in `to_state`: nothing was
     * done (no event, no merge; `merge` is empty).
     *
     * @generated from field: bool unchanged = 3;
     */
    unchanged: boolean;
};
/**
 * Describes the message berth.v1.TransitionChangesetResponse.
 * Use `create(TransitionChangesetResponseSchema)` to create a new message.
 */
export declare const TransitionChangesetResponseSchema: GenMessage<TransitionChangesetResponse>;
/**
 * Request of Heartbeat.
 *
 * @generated from message berth.v1.HeartbeatRequest
 */
export type HeartbeatRequest = Message<"berth.v1.HeartbeatRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
};
/**
 * Describes the message berth.v1.HeartbeatRequest.
 * Use `create(HeartbeatRequestSchema)` to create a new message.
 */
export declare const HeartbeatRequestSchema: GenMessage<HeartbeatRequest>;
/**
 * Response of Heartbeat.
 *
 * @generated from message berth.v1.HeartbeatResponse
 */
export type HeartbeatResponse = Message<"berth.v1.HeartbeatResponse"> & {
    /**
     * How long the session stays connected without another heartbeat, in milliseconds.
     *
     * @generated from field: uint32 lease_ms = 1;
     */
    leaseMs: number;
};
/**
 * Describes the message berth.v1.HeartbeatResponse.
 * Use `create(HeartbeatResponseSchema)` to create a new message.
 */
export declare const HeartbeatResponseSchema: GenMessage<HeartbeatResponse>;
/**
 * Request of AttachSession.
 *
 * @generated from message berth.v1.AttachSessionRequest
 */
export type AttachSessionRequest = Message<"berth.v1.AttachSessionRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
};
/**
 * Describes the message berth.v1.AttachSessionRequest.
 * Use `create(AttachSessionRequestSchema)` to create a new message.
 */
export declare const AttachSessionRequestSchema: GenMessage<AttachSessionRequest>;
/**
 * A message of AttachSession: first the workspace, then the session's notices.
 *
 * @generated from message berth.v1.AttachSessionResponse
 */
export type AttachSessionResponse = Message<"berth.v1.AttachSessionResponse"> & {
    /**
     * What this message carries.
     *
     * @generated from oneof berth.v1.AttachSessionResponse.message
     */
    message: {
        /**
         * First message: the workspace as attached.
         *
         * @generated from field: berth.v1.Workspace workspace = 1;
         */
        value: Workspace;
        case: "workspace";
    } | {
        /**
         * A lifecycle event concerning this session.
         *
         * @generated from field: berth.v1.Event event = 2;
         */
        value: Event;
        case: "event";
    } | {
        case: undefined;
        value?: undefined;
    };
};
/**
 * Describes the message berth.v1.AttachSessionResponse.
 * Use `create(AttachSessionResponseSchema)` to create a new message.
 */
export declare const AttachSessionResponseSchema: GenMessage<AttachSessionResponse>;
/**
 * Request of StrandSession.
 *
 * @generated from message berth.v1.StrandSessionRequest
 */
export type StrandSessionRequest = Message<"berth.v1.StrandSessionRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Why, at most 1024 characters.
     *
     * @generated from field: string reason = 2;
     */
    reason: string;
};
/**
 * Describes the message berth.v1.StrandSessionRequest.
 * Use `create(StrandSessionRequestSchema)` to create a new message.
 */
export declare const StrandSessionRequestSchema: GenMessage<StrandSessionRequest>;
/**
 * Response of StrandSession.
 *
 * @generated from message berth.v1.StrandSessionResponse
 */
export type StrandSessionResponse = Message<"berth.v1.StrandSessionResponse"> & {
    /**
     * The workspace, stranded.
     *
     * @generated from field: berth.v1.Workspace workspace = 1;
     */
    workspace?: Workspace | undefined;
};
/**
 * Describes the message berth.v1.StrandSessionResponse.
 * Use `create(StrandSessionResponseSchema)` to create a new message.
 */
export declare const StrandSessionResponseSchema: GenMessage<StrandSessionResponse>;
/**
 * Request of ResumeSession.
 *
 * @generated from message berth.v1.ResumeSessionRequest
 */
export type ResumeSessionRequest = Message<"berth.v1.ResumeSessionRequest"> & {
    /**
     * The stranded session (UUID).
     *
     * @generated from field: string dead_session_id = 1;
     */
    deadSessionId: string;
    /**
     * The agent resuming; must be the agent that owned the session.
     *
     * @generated from field: string agent_id = 2;
     */
    agentId: string;
};
/**
 * Describes the message berth.v1.ResumeSessionRequest.
 * Use `create(ResumeSessionRequestSchema)` to create a new message.
 */
export declare const ResumeSessionRequestSchema: GenMessage<ResumeSessionRequest>;
/**
 * Response of ResumeSession.
 *
 * @generated from message berth.v1.ResumeSessionResponse
 */
export type ResumeSessionResponse = Message<"berth.v1.ResumeSessionResponse"> & {
    /**
     * The new session id.
     *
     * @generated from field: string new_session_id = 1;
     */
    newSessionId: string;
    /**
     * The workspace, live again under the new session id.
     *
     * @generated from field: berth.v1.Workspace workspace = 2;
     */
    workspace?: Workspace | undefined;
};
/**
 * Describes the message berth.v1.ResumeSessionResponse.
 * Use `create(ResumeSessionResponseSchema)` to create a new message.
 */
export declare const ResumeSessionResponseSchema: GenMessage<ResumeSessionResponse>;
/**
 * Request of AbandonSession.
 *
 * @generated from message berth.v1.AbandonSessionRequest
 */
export type AbandonSessionRequest = Message<"berth.v1.AbandonSessionRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Why, at most 1024 characters.
     *
     * @generated from field: string reason = 2;
     */
    reason: string;
    /**
     * Explicit (default) or admin.
     *
     * @generated from field: berth.v1.AbandonCause cause = 3;
     */
    cause: AbandonCause;
};
/**
 * Describes the message berth.v1.AbandonSessionRequest.
 * Use `create(AbandonSessionRequestSchema)` to create a new message.
 */
export declare const AbandonSessionRequestSchema: GenMessage<AbandonSessionRequest>;
/**
 * Response of AbandonSession.
 *
 * @generated from message berth.v1.AbandonSessionResponse
 */
export type AbandonSessionResponse = Message<"berth.v1.AbandonSessionResponse"> & {
    /**
     * The workspace, abandoned.
     *
     * @generated from field: berth.v1.Workspace workspace = 1;
     */
    workspace?: Workspace | undefined;
};
/**
 * Describes the message berth.v1.AbandonSessionResponse.
 * Use `create(AbandonSessionResponseSchema)` to create a new message.
 */
export declare const AbandonSessionResponseSchema: GenMessage<AbandonSessionResponse>;
/**
 * Request of WatchEvents.
 *
 * @generated from message berth.v1.WatchEventsRequest
 */
export type WatchEventsRequest = Message<"berth.v1.WatchEventsRequest"> & {
    /**
     * Deliver events with seq greater than this; 0 for every retained event.
     *
     * @generated from field: uint64 after_seq = 1;
     */
    afterSeq: bigint;
    /**
     * Only these repositories (UUIDs); empty for all.
     *
     * @generated from field: repeated string repo_ids = 2;
     */
    repoIds: string[];
    /**
     * Only these kinds: exact ("session.stranded"), prefix ("session.*") or suffix ("*.stranded").
     *
     * @generated from field: repeated string kinds = 3;
     */
    kinds: string[];
    /**
     * Leave out the events of this session (UUID), e.g. the subscriber's own.
     *
     * @generated from field: string exclude_session_id = 4;
     */
    excludeSessionId: string;
};
/**
 * Describes the message berth.v1.WatchEventsRequest.
 * Use `create(WatchEventsRequestSchema)` to create a new message.
 */
export declare const WatchEventsRequestSchema: GenMessage<WatchEventsRequest>;
/**
 * A message of WatchEvents.
 *
 * @generated from message berth.v1.WatchEventsResponse
 */
export type WatchEventsResponse = Message<"berth.v1.WatchEventsResponse"> & {
    /**
     * The event.
     *
     * @generated from field: berth.v1.Event event = 1;
     */
    event?: Event | undefined;
};
/**
 * Describes the message berth.v1.WatchEventsResponse.
 * Use `create(WatchEventsResponseSchema)` to create a new message.
 */
export declare const WatchEventsResponseSchema: GenMessage<WatchEventsResponse>;
/**
 * Another session that touched the same file.
 *
 * @generated from message berth.v1.OtherModifier
 */
export type OtherModifier = Message<"berth.v1.OtherModifier"> & {
    /**
     * The other session.
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Its agent.
     *
     * @generated from field: string agent_id = 2;
     */
    agentId: string;
    /**
     * Its agent's name.
     *
     * @generated from field: string agent_name = 3;
     */
    agentName: string;
    /**
     * The symbols of the file it changed; empty when it changed the file as a whole.
     *
     * @generated from field: repeated string symbols = 4;
     */
    symbols: string[];
    /**
     * Its changeset's state.
     *
     * @generated from field: berth.v1.ChangesetState changeset_state = 5;
     */
    changesetState: ChangesetState;
};
/**
 * Describes the message berth.v1.OtherModifier.
 * Use `create(OtherModifierSchema)` to create a new message.
 */
export declare const OtherModifierSchema: GenMessage<OtherModifier>;
/**
 * Request of WriteFile.
 *
 * @generated from message berth.v1.WriteFileRequest
 */
export type WriteFileRequest = Message<"berth.v1.WriteFileRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Repository-relative path: no leading /, no .. segments, no backslashes or NUL, at most 4096 bytes.
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * The new content, at most BERTH_MAX_FILE_BYTES.
     *
     * @generated from field: bytes content = 3;
     */
    content: Uint8Array;
    /**
     * Write only if the current content (overlay, else base) has this sha256 (hex); empty string: only if the file does not exist.
     *
     * @generated from field: optional string expected_hash = 4;
     */
    expectedHash?: string | undefined;
    /**
     * Symbols the client declares it changes, in addition to those Berth extracts.
     *
     * @generated from field: repeated string declared_symbols = 5;
     */
    declaredSymbols: string[];
};
/**
 * Describes the message berth.v1.WriteFileRequest.
 * Use `create(WriteFileRequestSchema)` to create a new message.
 */
export declare const WriteFileRequestSchema: GenMessage<WriteFileRequest>;
/**
 * Response of WriteFile.
 *
 * @generated from message berth.v1.WriteFileResponse
 */
export type WriteFileResponse = Message<"berth.v1.WriteFileResponse"> & {
    /**
     * sha256 (hex) of the stored content.
     *
     * @generated from field: string new_hash = 1;
     */
    newHash: string;
    /**
     * ADDED or MODIFIED.
     *
     * @generated from field: berth.v1.FileChange change = 2;
     */
    change: FileChange;
    /**
     * The symbols the write changed (and claimed).
     *
     * @generated from field: repeated berth.v1.SymbolChange symbols = 3;
     */
    symbols: SymbolChange[];
    /**
     * Other sessions that touched this file.
     *
     * @generated from field: repeated berth.v1.OtherModifier conflicts = 4;
     */
    conflicts: OtherModifier[];
};
/**
 * Describes the message berth.v1.WriteFileResponse.
 * Use `create(WriteFileResponseSchema)` to create a new message.
 */
export declare const WriteFileResponseSchema: GenMessage<WriteFileResponse>;
/**
 * Request of DeleteFile.
 *
 * @generated from message berth.v1.DeleteFileRequest
 */
export type DeleteFileRequest = Message<"berth.v1.DeleteFileRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Delete only if the current content has this sha256 (hex).
     *
     * @generated from field: optional string expected_hash = 3;
     */
    expectedHash?: string | undefined;
};
/**
 * Describes the message berth.v1.DeleteFileRequest.
 * Use `create(DeleteFileRequestSchema)` to create a new message.
 */
export declare const DeleteFileRequestSchema: GenMessage<DeleteFileRequest>;
/**
 * Response of DeleteFile.
 *
 * @generated from message berth.v1.DeleteFileResponse
 */
export type DeleteFileResponse = Message<"berth.v1.DeleteFileResponse"> & {
    /**
     * The symbols the delete removed (and claimed).
     *
     * @generated from field: repeated berth.v1.SymbolChange symbols = 1;
     */
    symbols: SymbolChange[];
    /**
     * Other sessions that touched this file.
     *
     * @generated from field: repeated berth.v1.OtherModifier conflicts = 2;
     */
    conflicts: OtherModifier[];
};
/**
 * Describes the message berth.v1.DeleteFileResponse.
 * Use `create(DeleteFileResponseSchema)` to create a new message.
 */
export declare const DeleteFileResponseSchema: GenMessage<DeleteFileResponse>;
/**
 * Request of ReadFile.
 *
 * @generated from message berth.v1.ReadFileRequest
 */
export type ReadFileRequest = Message<"berth.v1.ReadFileRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 2;
     */
    path: string;
};
/**
 * Describes the message berth.v1.ReadFileRequest.
 * Use `create(ReadFileRequestSchema)` to create a new message.
 */
export declare const ReadFileRequestSchema: GenMessage<ReadFileRequest>;
/**
 * Response of ReadFile.
 *
 * @generated from message berth.v1.ReadFileResponse
 */
export type ReadFileResponse = Message<"berth.v1.ReadFileResponse"> & {
    /**
     * The content.
     *
     * @generated from field: bytes content = 1;
     */
    content: Uint8Array;
    /**
     * sha256 (hex) of the content.
     *
     * @generated from field: string hash = 2;
     */
    hash: string;
    /**
     * Overlay or base.
     *
     * @generated from field: berth.v1.FileSource source = 3;
     */
    source: FileSource;
};
/**
 * Describes the message berth.v1.ReadFileResponse.
 * Use `create(ReadFileResponseSchema)` to create a new message.
 */
export declare const ReadFileResponseSchema: GenMessage<ReadFileResponse>;
/**
 * Request of ListFiles.
 *
 * @generated from message berth.v1.ListFilesRequest
 */
export type ListFilesRequest = Message<"berth.v1.ListFilesRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Only paths starting with this prefix.
     *
     * @generated from field: string prefix = 2;
     */
    prefix: string;
    /**
     * At most this many entries (default 1000, at most 10000).
     *
     * @generated from field: uint32 page_size = 3;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page.
     *
     * @generated from field: string page_token = 4;
     */
    pageToken: string;
    /**
     * Also list the base paths this workspace deleted, each with FileEntry.deleted set. Without it the
     * merged view lists only what exists (every listed path can be read); page_size counts returned entries.
     *
     * @generated from field: bool include_deleted = 5;
     */
    includeDeleted: boolean;
};
/**
 * Describes the message berth.v1.ListFilesRequest.
 * Use `create(ListFilesRequestSchema)` to create a new message.
 */
export declare const ListFilesRequestSchema: GenMessage<ListFilesRequest>;
/**
 * One file of the merged view.
 *
 * @generated from message berth.v1.FileEntry
 */
export type FileEntry = Message<"berth.v1.FileEntry"> & {
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * Overlay or base.
     *
     * @generated from field: berth.v1.FileSource source = 2;
     */
    source: FileSource;
    /**
     * For overlay entries: ADDED or MODIFIED.
     *
     * @generated from field: berth.v1.FileChange change = 3;
     */
    change: FileChange;
    /**
     * Another live session has this path in its overlay.
     *
     * @generated from field: bool modified_by_other = 4;
     */
    modifiedByOther: boolean;
    /**
     * The path is in the base and this workspace deleted it (source OVERLAY, change DELETED); listed
     * only when the request sets include_deleted.
     *
     * @generated from field: bool deleted = 5;
     */
    deleted: boolean;
};
/**
 * Describes the message berth.v1.FileEntry.
 * Use `create(FileEntrySchema)` to create a new message.
 */
export declare const FileEntrySchema: GenMessage<FileEntry>;
/**
 * Request of ListClaims.
 *
 * @generated from message berth.v1.ListClaimsRequest
 */
export type ListClaimsRequest = Message<"berth.v1.ListClaimsRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * At most this many claims (0: the default, 1000; at most 10000, more is INVALID_ARGUMENT).
     *
     * @generated from field: uint32 page_size = 20;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page; empty for the first.
     *
     * @generated from field: string page_token = 21;
     */
    pageToken: string;
};
/**
 * Describes the message berth.v1.ListClaimsRequest.
 * Use `create(ListClaimsRequestSchema)` to create a new message.
 */
export declare const ListClaimsRequestSchema: GenMessage<ListClaimsRequest>;
/**
 * Response of ListClaims.
 *
 * @generated from message berth.v1.ListClaimsResponse
 */
export type ListClaimsResponse = Message<"berth.v1.ListClaimsResponse"> & {
    /**
     * The page's claims, by path, then symbol.
     *
     * @generated from field: repeated berth.v1.Claim claims = 1;
     */
    claims: Claim[];
    /**
     * Pass as page_token to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 20;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListClaimsResponse.
 * Use `create(ListClaimsResponseSchema)` to create a new message.
 */
export declare const ListClaimsResponseSchema: GenMessage<ListClaimsResponse>;
/**
 * Response of ListFiles.
 *
 * @generated from message berth.v1.ListFilesResponse
 */
export type ListFilesResponse = Message<"berth.v1.ListFilesResponse"> & {
    /**
     * Entries in path order.
     *
     * @generated from field: repeated berth.v1.FileEntry entries = 1;
     */
    entries: FileEntry[];
    /**
     * Pass to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 2;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListFilesResponse.
 * Use `create(ListFilesResponseSchema)` to create a new message.
 */
export declare const ListFilesResponseSchema: GenMessage<ListFilesResponse>;
/**
 * A symbol of a file.
 *
 * @generated from message berth.v1.SymbolRef
 */
export type SymbolRef = Message<"berth.v1.SymbolRef"> & {
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * Qualified symbol name; empty for the file as a whole.
     *
     * @generated from field: string symbol = 2;
     */
    symbol: string;
};
/**
 * Describes the message berth.v1.SymbolRef.
 * Use `create(SymbolRefSchema)` to create a new message.
 */
export declare const SymbolRefSchema: GenMessage<SymbolRef>;
/**
 * A claim held by a session.
 *
 * @generated from message berth.v1.Claim
 */
export type Claim = Message<"berth.v1.Claim"> & {
    /**
     * The repository.
     *
     * @generated from field: string repo_id = 1;
     */
    repoId: string;
    /**
     * The path.
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * The qualified symbol.
     *
     * @generated from field: string symbol = 3;
     */
    symbol: string;
    /**
     * The holder.
     *
     * @generated from field: string session_id = 4;
     */
    sessionId: string;
    /**
     * The holder's agent.
     *
     * @generated from field: string agent_id = 5;
     */
    agentId: string;
    /**
     * The holder's agent name.
     *
     * @generated from field: string agent_name = 6;
     */
    agentName: string;
    /**
     * Since when.
     *
     * @generated from field: google.protobuf.Timestamp acquired_at = 7;
     */
    acquiredAt?: Timestamp | undefined;
    /**
     * The file does not define this symbol yet: a reservation; a typo shows here. Granted and
     * exclusive like any claim; false again once a write of the session defines the symbol (and true
     * again if a write removes it).
     *
     * @generated from field: bool not_yet_defined = 8;
     */
    notYetDefined: boolean;
};
/**
 * Describes the message berth.v1.Claim.
 * Use `create(ClaimSchema)` to create a new message.
 */
export declare const ClaimSchema: GenMessage<Claim>;
/**
 * Request of ClaimSymbols.
 *
 * @generated from message berth.v1.ClaimSymbolsRequest
 */
export type ClaimSymbolsRequest = Message<"berth.v1.ClaimSymbolsRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * The symbols, 1 to 1000.
     *
     * @generated from field: repeated berth.v1.SymbolRef symbols = 2;
     */
    symbols: SymbolRef[];
};
/**
 * Describes the message berth.v1.ClaimSymbolsRequest.
 * Use `create(ClaimSymbolsRequestSchema)` to create a new message.
 */
export declare const ClaimSymbolsRequestSchema: GenMessage<ClaimSymbolsRequest>;
/**
 * Response of ClaimSymbols.
 *
 * @generated from message berth.v1.ClaimSymbolsResponse
 */
export type ClaimSymbolsResponse = Message<"berth.v1.ClaimSymbolsResponse"> & {
    /**
     * The claims now held.
     *
     * @generated from field: repeated berth.v1.Claim claims = 1;
     */
    claims: Claim[];
};
/**
 * Describes the message berth.v1.ClaimSymbolsResponse.
 * Use `create(ClaimSymbolsResponseSchema)` to create a new message.
 */
export declare const ClaimSymbolsResponseSchema: GenMessage<ClaimSymbolsResponse>;
/**
 * Request of ReleaseSymbols.
 *
 * @generated from message berth.v1.ReleaseSymbolsRequest
 */
export type ReleaseSymbolsRequest = Message<"berth.v1.ReleaseSymbolsRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * The symbols to release; empty releases every claim of the session.
     *
     * @generated from field: repeated berth.v1.SymbolRef symbols = 2;
     */
    symbols: SymbolRef[];
};
/**
 * Describes the message berth.v1.ReleaseSymbolsRequest.
 * Use `create(ReleaseSymbolsRequestSchema)` to create a new message.
 */
export declare const ReleaseSymbolsRequestSchema: GenMessage<ReleaseSymbolsRequest>;
/**
 * Response of ReleaseSymbols.
 *
 * @generated from message berth.v1.ReleaseSymbolsResponse
 */
export type ReleaseSymbolsResponse = Message<"berth.v1.ReleaseSymbolsResponse"> & {
    /**
     * How many claims were released.
     *
     * @generated from field: uint32 released = 1;
     */
    released: number;
};
/**
 * Describes the message berth.v1.ReleaseSymbolsResponse.
 * Use `create(ReleaseSymbolsResponseSchema)` to create a new message.
 */
export declare const ReleaseSymbolsResponseSchema: GenMessage<ReleaseSymbolsResponse>;
/**
 * Request of DescribeOtherModifiers.
 *
 * @generated from message berth.v1.DescribeOtherModifiersRequest
 */
export type DescribeOtherModifiersRequest = Message<"berth.v1.DescribeOtherModifiersRequest"> & {
    /**
     * The repository (UUID).
     *
     * @generated from field: string repo_id = 1;
     */
    repoId: string;
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Leave out this session (UUID), usually the caller's.
     *
     * @generated from field: string exclude_session_id = 3;
     */
    excludeSessionId: string;
};
/**
 * Describes the message berth.v1.DescribeOtherModifiersRequest.
 * Use `create(DescribeOtherModifiersRequestSchema)` to create a new message.
 */
export declare const DescribeOtherModifiersRequestSchema: GenMessage<DescribeOtherModifiersRequest>;
/**
 * Response of DescribeOtherModifiers.
 *
 * @generated from message berth.v1.DescribeOtherModifiersResponse
 */
export type DescribeOtherModifiersResponse = Message<"berth.v1.DescribeOtherModifiersResponse"> & {
    /**
     * e.g. "create_task modified by agent-2" or "{a, b, c} modified by agent-2; modified by agent-3"; empty when nobody.
     *
     * @generated from field: string text = 1;
     */
    text: string;
    /**
     * The same, structured.
     *
     * @generated from field: repeated berth.v1.OtherModifier modifiers = 2;
     */
    modifiers: OtherModifier[];
};
/**
 * Describes the message berth.v1.DescribeOtherModifiersResponse.
 * Use `create(DescribeOtherModifiersResponseSchema)` to create a new message.
 */
export declare const DescribeOtherModifiersResponseSchema: GenMessage<DescribeOtherModifiersResponse>;
/**
 * Who a commit names as its author.
 *
 * @generated from message berth.v1.CommitAuthor
 */
export type CommitAuthor = Message<"berth.v1.CommitAuthor"> & {
    /**
     * The author's name; empty: the calling agent's id.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * The author's e-mail; empty: <agent id>@berth.invalid.
     *
     * @generated from field: string email = 2;
     */
    email: string;
};
/**
 * Describes the message berth.v1.CommitAuthor.
 * Use `create(CommitAuthorSchema)` to create a new message.
 */
export declare const CommitAuthorSchema: GenMessage<CommitAuthor>;
/**
 * Request of CommitChangeset.
 *
 * @generated from message berth.v1.CommitChangesetRequest
 */
export type CommitChangesetRequest = Message<"berth.v1.CommitChangesetRequest"> & {
    /**
     * The changeset (UUID).
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
    /**
     * The commit message, at most 65536 characters; empty: the intents of the changeset's sessions,
     * then the messages of the commits their agents made in their environments, as EndTurn kept
     * them (Turn.commit_messages), in turn order, each once.
     *
     * @generated from field: string message = 2;
     */
    message: string;
    /**
     * The author; unset: the calling agent.
     *
     * @generated from field: berth.v1.CommitAuthor author = 3;
     */
    author?: CommitAuthor | undefined;
};
/**
 * Describes the message berth.v1.CommitChangesetRequest.
 * Use `create(CommitChangesetRequestSchema)` to create a new message.
 */
export declare const CommitChangesetRequestSchema: GenMessage<CommitChangesetRequest>;
/**
 * Response of CommitChangeset.
 *
 * @generated from message berth.v1.CommitChangesetResponse
 */
export type CommitChangesetResponse = Message<"berth.v1.CommitChangesetResponse"> & {
    /**
     * The changeset, with its commit_id.
     *
     * @generated from field: berth.v1.Changeset changeset = 1;
     */
    changeset?: Changeset | undefined;
    /**
     * The commit written (40 hex digits).
     *
     * @generated from field: string commit_id = 2;
     */
    commitId: string;
    /**
     * The ref that points at it (refs/heads/berth/<changeset_id>).
     *
     * @generated from field: string ref = 3;
     */
    ref: string;
    /**
     * The commit's tree.
     *
     * @generated from field: string tree_id = 4;
     */
    treeId: string;
    /**
     * How many paths the overlay changed (added, modified or deleted).
     *
     * @generated from field: uint32 paths = 5;
     */
    paths: number;
    /**
     * True when the ref already pointed at this very commit: nothing was written.
     *
     * @generated from field: bool unchanged = 6;
     */
    unchanged: boolean;
};
/**
 * Describes the message berth.v1.CommitChangesetResponse.
 * Use `create(CommitChangesetResponseSchema)` to create a new message.
 */
export declare const CommitChangesetResponseSchema: GenMessage<CommitChangesetResponse>;
/**
 * What a MERGED transition did to its target branch.
 *
 * @generated from message berth.v1.MergeOutcome
 */
export type MergeOutcome = Message<"berth.v1.MergeOutcome"> & {
    /**
     * The full ref merged into (refs/heads/main).
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
     * The target after the merge (equal to old_commit_id when the commit was already in it).
     *
     * @generated from field: string new_commit_id = 3;
     */
    newCommitId: string;
    /**
     * The changeset's commit that was merged.
     *
     * @generated from field: string changeset_commit_id = 4;
     */
    changesetCommitId: string;
    /**
     * True when the target only moved forward to the changeset's commit (no merge commit).
     *
     * @generated from field: bool fast_forward = 5;
     */
    fastForward: boolean;
};
/**
 * Describes the message berth.v1.MergeOutcome.
 * Use `create(MergeOutcomeSchema)` to create a new message.
 */
export declare const MergeOutcomeSchema: GenMessage<MergeOutcome>;
/**
 * Request of DiffWorkspace.
 *
 * @generated from message berth.v1.DiffWorkspaceRequest
 */
export type DiffWorkspaceRequest = Message<"berth.v1.DiffWorkspaceRequest"> & {
    /**
     * The session.
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * Include binary files as git binary patches (`git apply` reproduces them); by default they
     * are marked "Binary files … differ" with no content.
     *
     * @generated from field: bool binary = 2;
     */
    binary: boolean;
};
/**
 * Describes the message berth.v1.DiffWorkspaceRequest.
 * Use `create(DiffWorkspaceRequestSchema)` to create a new message.
 */
export declare const DiffWorkspaceRequestSchema: GenMessage<DiffWorkspaceRequest>;
/**
 * One path of a diff.
 *
 * @generated from message berth.v1.PathDiff
 */
export type PathDiff = Message<"berth.v1.PathDiff"> & {
    /**
     * Repository-relative path (after a rename: the new path).
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * ADDED, MODIFIED or DELETED; a rename is MODIFIED with old_path set.
     *
     * @generated from field: berth.v1.FileChange change = 2;
     */
    change: FileChange;
    /**
     * A rename: the path in the base.
     *
     * @generated from field: string old_path = 3;
     */
    oldPath: string;
    /**
     * Lines added (0 for a binary file).
     *
     * @generated from field: uint32 lines_added = 4;
     */
    linesAdded: number;
    /**
     * Lines removed (0 for a binary file).
     *
     * @generated from field: uint32 lines_removed = 5;
     */
    linesRemoved: number;
    /**
     * The content is binary: no text hunks.
     *
     * @generated from field: bool binary = 6;
     */
    binary: boolean;
    /**
     * The qualified symbols the sessions changed in the path (from the overlay).
     *
     * @generated from field: repeated string symbols = 7;
     */
    symbols: string[];
};
/**
 * Describes the message berth.v1.PathDiff.
 * Use `create(PathDiffSchema)` to create a new message.
 */
export declare const PathDiffSchema: GenMessage<PathDiff>;
/**
 * Response of DiffWorkspace.
 *
 * @generated from message berth.v1.DiffWorkspaceResponse
 */
export type DiffWorkspaceResponse = Message<"berth.v1.DiffWorkspaceResponse"> & {
    /**
     * The unified diff (git's format, a/ and b/ prefixes), empty when nothing changed. Bytes:
     * the files' own bytes, whatever their encoding, so that `git apply` reproduces them.
     *
     * @generated from field: bytes patch = 1;
     */
    patch: Uint8Array;
    /**
     * One entry per changed path, in path order.
     *
     * @generated from field: repeated berth.v1.PathDiff paths = 2;
     */
    paths: PathDiff[];
    /**
     * The commit the diff is against.
     *
     * @generated from field: string base_commit = 3;
     */
    baseCommit: string;
};
/**
 * Describes the message berth.v1.DiffWorkspaceResponse.
 * Use `create(DiffWorkspaceResponseSchema)` to create a new message.
 */
export declare const DiffWorkspaceResponseSchema: GenMessage<DiffWorkspaceResponse>;
/**
 * Request of SetRepositoryCheck.
 *
 * @generated from message berth.v1.SetRepositoryCheckRequest
 */
export type SetRepositoryCheckRequest = Message<"berth.v1.SetRepositoryCheckRequest"> & {
    /**
     * The repository.
     *
     * @generated from field: string repository_id = 1;
     */
    repositoryId: string;
    /**
     * The check; absent (or with no argv) clears it.
     *
     * @generated from field: berth.v1.RepositoryCheck check = 2;
     */
    check?: RepositoryCheck | undefined;
};
/**
 * Describes the message berth.v1.SetRepositoryCheckRequest.
 * Use `create(SetRepositoryCheckRequestSchema)` to create a new message.
 */
export declare const SetRepositoryCheckRequestSchema: GenMessage<SetRepositoryCheckRequest>;
/**
 * Response of SetRepositoryCheck.
 *
 * @generated from message berth.v1.SetRepositoryCheckResponse
 */
export type SetRepositoryCheckResponse = Message<"berth.v1.SetRepositoryCheckResponse"> & {
    /**
     * The repository as it is now.
     *
     * @generated from field: berth.v1.Repository repository = 1;
     */
    repository?: Repository | undefined;
};
/**
 * Describes the message berth.v1.SetRepositoryCheckResponse.
 * Use `create(SetRepositoryCheckResponseSchema)` to create a new message.
 */
export declare const SetRepositoryCheckResponseSchema: GenMessage<SetRepositoryCheckResponse>;
/**
 * Request of ListVerifications.
 *
 * @generated from message berth.v1.ListVerificationsRequest
 */
export type ListVerificationsRequest = Message<"berth.v1.ListVerificationsRequest"> & {
    /**
     * The changeset.
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
};
/**
 * Describes the message berth.v1.ListVerificationsRequest.
 * Use `create(ListVerificationsRequestSchema)` to create a new message.
 */
export declare const ListVerificationsRequestSchema: GenMessage<ListVerificationsRequest>;
/**
 * Response of ListVerifications.
 *
 * @generated from message berth.v1.ListVerificationsResponse
 */
export type ListVerificationsResponse = Message<"berth.v1.ListVerificationsResponse"> & {
    /**
     * Its verifications, oldest first (at most the last 100).
     *
     * @generated from field: repeated berth.v1.Verification verifications = 1;
     */
    verifications: Verification[];
};
/**
 * Describes the message berth.v1.ListVerificationsResponse.
 * Use `create(ListVerificationsResponseSchema)` to create a new message.
 */
export declare const ListVerificationsResponseSchema: GenMessage<ListVerificationsResponse>;
/**
 * Request of DiffChangeset.
 *
 * @generated from message berth.v1.DiffChangesetRequest
 */
export type DiffChangesetRequest = Message<"berth.v1.DiffChangesetRequest"> & {
    /**
     * The changeset.
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
    /**
     * As DiffWorkspaceRequest.binary.
     *
     * @generated from field: bool binary = 2;
     */
    binary: boolean;
};
/**
 * Describes the message berth.v1.DiffChangesetRequest.
 * Use `create(DiffChangesetRequestSchema)` to create a new message.
 */
export declare const DiffChangesetRequestSchema: GenMessage<DiffChangesetRequest>;
/**
 * Two sessions of a changeset that leave a path different.
 *
 * @generated from message berth.v1.PathConflict
 */
export type PathConflict = Message<"berth.v1.PathConflict"> & {
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * The sessions whose overlays differ on it.
     *
     * @generated from field: repeated string session_ids = 2;
     */
    sessionIds: string[];
    /**
     * Why: DIFFERENT_CONTENT or DIFFERENT_BASE (the sessions are on different base commits).
     *
     * @generated from field: string reason = 3;
     */
    reason: string;
};
/**
 * Describes the message berth.v1.PathConflict.
 * Use `create(PathConflictSchema)` to create a new message.
 */
export declare const PathConflictSchema: GenMessage<PathConflict>;
/**
 * Response of DiffChangeset.
 *
 * @generated from message berth.v1.DiffChangesetResponse
 */
export type DiffChangesetResponse = Message<"berth.v1.DiffChangesetResponse"> & {
    /**
     * The combined unified diff; a conflicting path shows the first session's version.
     *
     * @generated from field: bytes patch = 1;
     */
    patch: Uint8Array;
    /**
     * One entry per changed path, in path order.
     *
     * @generated from field: repeated berth.v1.PathDiff paths = 2;
     */
    paths: PathDiff[];
    /**
     * The base commit of the sessions (the first session's, when they differ).
     *
     * @generated from field: string base_commit = 3;
     */
    baseCommit: string;
    /**
     * Paths on which the sessions differ.
     *
     * @generated from field: repeated berth.v1.PathConflict conflicts = 4;
     */
    conflicts: PathConflict[];
    /**
     * The sessions combined (active and stranded ones).
     *
     * @generated from field: repeated string session_ids = 5;
     */
    sessionIds: string[];
};
/**
 * Describes the message berth.v1.DiffChangesetResponse.
 * Use `create(DiffChangesetResponseSchema)` to create a new message.
 */
export declare const DiffChangesetResponseSchema: GenMessage<DiffChangesetResponse>;
/**
 * Request of RebaseWorkspace.
 *
 * @generated from message berth.v1.RebaseWorkspaceRequest
 */
export type RebaseWorkspaceRequest = Message<"berth.v1.RebaseWorkspaceRequest"> & {
    /**
     * The session.
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * A commit id or ref of the repository to move onto.
     *
     * @generated from field: string onto = 2;
     */
    onto: string;
};
/**
 * Describes the message berth.v1.RebaseWorkspaceRequest.
 * Use `create(RebaseWorkspaceRequestSchema)` to create a new message.
 */
export declare const RebaseWorkspaceRequestSchema: GenMessage<RebaseWorkspaceRequest>;
/**
 * A file the rebase could not merge cleanly.
 *
 * @generated from message berth.v1.RebaseConflict
 */
export type RebaseConflict = Message<"berth.v1.RebaseConflict"> & {
    /**
     * Repository-relative path.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * CONTENT (both changed the same lines: the overlay holds the conflict markers),
     * MODIFY_DELETE (the workspace changed a file the new base deleted: the overlay keeps the
     * workspace's version), DELETE_MODIFY (the workspace deleted a file the new base changed:
     * the deletion stays), ADD_ADD (both added the path differently: conflict markers), BINARY
     * (a binary file both changed: the overlay keeps the workspace's version).
     *
     * @generated from field: string kind = 2;
     */
    kind: string;
};
/**
 * Describes the message berth.v1.RebaseConflict.
 * Use `create(RebaseConflictSchema)` to create a new message.
 */
export declare const RebaseConflictSchema: GenMessage<RebaseConflict>;
/**
 * Response of RebaseWorkspace.
 *
 * @generated from message berth.v1.RebaseWorkspaceResponse
 */
export type RebaseWorkspaceResponse = Message<"berth.v1.RebaseWorkspaceResponse"> & {
    /**
     * The workspace on its new base.
     *
     * @generated from field: berth.v1.Workspace workspace = 1;
     */
    workspace?: Workspace | undefined;
    /**
     * The base commit before.
     *
     * @generated from field: string old_base_commit = 2;
     */
    oldBaseCommit: string;
    /**
     * Paths merged cleanly (their overlay content changed).
     *
     * @generated from field: repeated string merged = 3;
     */
    merged: string[];
    /**
     * Paths whose conflicts are left for the agent.
     *
     * @generated from field: repeated berth.v1.RebaseConflict conflicts = 4;
     */
    conflicts: RebaseConflict[];
    /**
     * Overlay paths dropped because the new base already has the same content.
     *
     * @generated from field: repeated string dropped = 5;
     */
    dropped: string[];
};
/**
 * Describes the message berth.v1.RebaseWorkspaceResponse.
 * Use `create(RebaseWorkspaceResponseSchema)` to create a new message.
 */
export declare const RebaseWorkspaceResponseSchema: GenMessage<RebaseWorkspaceResponse>;
/**
 * Request of ResolveIdPrefix.
 *
 * @generated from message berth.v1.ResolveIdPrefixRequest
 */
export type ResolveIdPrefixRequest = Message<"berth.v1.ResolveIdPrefixRequest"> & {
    /**
     * Which ids.
     *
     * @generated from field: berth.v1.IdKind kind = 1;
     */
    kind: IdKind;
    /**
     * The start of an id as a UUID is written: 4 to 36 characters, hex digits (any case) and the
     * dashes where a UUID has them, e.g. "5e2b1c9a" or "5e2b1c9a-4f".
     *
     * @generated from field: string prefix = 2;
     */
    prefix: string;
};
/**
 * Describes the message berth.v1.ResolveIdPrefixRequest.
 * Use `create(ResolveIdPrefixRequestSchema)` to create a new message.
 */
export declare const ResolveIdPrefixRequestSchema: GenMessage<ResolveIdPrefixRequest>;
/**
 * Response of ResolveIdPrefix.
 *
 * @generated from message berth.v1.ResolveIdPrefixResponse
 */
export type ResolveIdPrefixResponse = Message<"berth.v1.ResolveIdPrefixResponse"> & {
    /**
     * The matching ids, ascending, at most 10 (lower-case UUIDs).
     *
     * @generated from field: repeated string ids = 1;
     */
    ids: string[];
    /**
     * More ids match than `ids` lists.
     *
     * @generated from field: bool more = 2;
     */
    more: boolean;
};
/**
 * Describes the message berth.v1.ResolveIdPrefixResponse.
 * Use `create(ResolveIdPrefixResponseSchema)` to create a new message.
 */
export declare const ResolveIdPrefixResponseSchema: GenMessage<ResolveIdPrefixResponse>;
/**
 * Request of ListChangesets.
 *
 * @generated from message berth.v1.ListChangesetsRequest
 */
export type ListChangesetsRequest = Message<"berth.v1.ListChangesetsRequest"> & {
    /**
     * The repository (UUID).
     *
     * @generated from field: string repo_id = 1;
     */
    repoId: string;
    /**
     * Only changesets in these states; empty: every state.
     *
     * @generated from field: repeated berth.v1.ChangesetState states = 2;
     */
    states: ChangesetState[];
    /**
     * At most this many changesets (0: the default, 100; at most 1000, more is INVALID_ARGUMENT).
     *
     * @generated from field: uint32 page_size = 3;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page; empty for the first.
     *
     * @generated from field: string page_token = 4;
     */
    pageToken: string;
};
/**
 * Describes the message berth.v1.ListChangesetsRequest.
 * Use `create(ListChangesetsRequestSchema)` to create a new message.
 */
export declare const ListChangesetsRequestSchema: GenMessage<ListChangesetsRequest>;
/**
 * Response of ListChangesets.
 *
 * @generated from message berth.v1.ListChangesetsResponse
 */
export type ListChangesetsResponse = Message<"berth.v1.ListChangesetsResponse"> & {
    /**
     * The page's changesets, newest created first (a changeset keeps its place when it moves).
     *
     * @generated from field: repeated berth.v1.Changeset changesets = 1;
     */
    changesets: Changeset[];
    /**
     * Pass as page_token to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 2;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListChangesetsResponse.
 * Use `create(ListChangesetsResponseSchema)` to create a new message.
 */
export declare const ListChangesetsResponseSchema: GenMessage<ListChangesetsResponse>;
/**
 * Request of GetChangeset.
 *
 * @generated from message berth.v1.GetChangesetRequest
 */
export type GetChangesetRequest = Message<"berth.v1.GetChangesetRequest"> & {
    /**
     * The changeset (UUID).
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
};
/**
 * Describes the message berth.v1.GetChangesetRequest.
 * Use `create(GetChangesetRequestSchema)` to create a new message.
 */
export declare const GetChangesetRequestSchema: GenMessage<GetChangesetRequest>;
/**
 * One state change of a changeset, as recorded in the transaction that made it.
 *
 * @generated from message berth.v1.ChangesetTransition
 */
export type ChangesetTransition = Message<"berth.v1.ChangesetTransition"> & {
    /**
     * The state it left.
     *
     * @generated from field: berth.v1.ChangesetState from = 1;
     */
    from: ChangesetState;
    /**
     * The state it entered.
     *
     * @generated from field: berth.v1.ChangesetState to = 2;
     */
    to: ChangesetState;
    /**
     * The reason given with it (an abandonment's is session_abandoned:<cause>).
     *
     * @generated from field: string reason = 3;
     */
    reason: string;
    /**
     * Who moved it: the calling agent's id, "anonymous" (a call with auth off), or "berth" (the
     * server itself, e.g. a changeset rejected because its last session was abandoned).
     *
     * @generated from field: string who = 4;
     */
    who: string;
    /**
     * When.
     *
     * @generated from field: google.protobuf.Timestamp at = 5;
     */
    at?: Timestamp | undefined;
};
/**
 * Describes the message berth.v1.ChangesetTransition.
 * Use `create(ChangesetTransitionSchema)` to create a new message.
 */
export declare const ChangesetTransitionSchema: GenMessage<ChangesetTransition>;
/**
 * Response of GetChangeset.
 *
 * @generated from message berth.v1.GetChangesetResponse
 */
export type GetChangesetResponse = Message<"berth.v1.GetChangesetResponse"> & {
    /**
     * The changeset as it is now.
     *
     * @generated from field: berth.v1.Changeset changeset = 1;
     */
    changeset?: Changeset | undefined;
    /**
     * Its transitions, oldest first (those made before this history was kept are not listed).
     *
     * @generated from field: repeated berth.v1.ChangesetTransition transitions = 2;
     */
    transitions: ChangesetTransition[];
    /**
     * Every session that works or worked on it, oldest first, in any lifecycle state.
     *
     * @generated from field: repeated berth.v1.SessionInfo sessions = 3;
     */
    sessions: SessionInfo[];
    /**
     * Its branch (a full ref, as CommitChangesetResponse.ref) once a commit was written; empty before.
     *
     * @generated from field: string branch = 4;
     */
    branch: string;
    /**
     * The branch it was merged into (a full ref) when MERGED into a git repository; empty otherwise.
     *
     * @generated from field: string merged_into = 5;
     */
    mergedInto: string;
    /**
     * The states the caller may move it to now (TransitionChangeset's own rule: its state machine
     * and who may move it); empty for a caller that may only read it, and for a terminal changeset.
     *
     * @generated from field: repeated berth.v1.ChangesetState allowed_transitions = 6;
     */
    allowedTransitions: ChangesetState[];
};
/**
 * Describes the message berth.v1.GetChangesetResponse.
 * Use `create(GetChangesetResponseSchema)` to create a new message.
 */
export declare const GetChangesetResponseSchema: GenMessage<GetChangesetResponse>;
/**
 * Request of AddComment.
 *
 * @generated from message berth.v1.AddCommentRequest
 */
export type AddCommentRequest = Message<"berth.v1.AddCommentRequest"> & {
    /**
     * The changeset (UUID).
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
    /**
     * The comment, 1–10000 characters (newlines and tabs allowed).
     *
     * @generated from field: string body = 2;
     */
    body: string;
    /**
     * Optional repository-relative path the comment is about (the path rules of WriteFile); empty:
     * the comment is on the changeset as a whole.
     *
     * @generated from field: string path = 3;
     */
    path: string;
    /**
     * Optional line of `path`, counted in the new file's lines of the changeset's diff (1 is the
     * first line); 0: the whole file. A line needs a path.
     *
     * @generated from field: uint32 line = 4;
     */
    line: number;
};
/**
 * Describes the message berth.v1.AddCommentRequest.
 * Use `create(AddCommentRequestSchema)` to create a new message.
 */
export declare const AddCommentRequestSchema: GenMessage<AddCommentRequest>;
/**
 * Response of AddComment.
 *
 * @generated from message berth.v1.AddCommentResponse
 */
export type AddCommentResponse = Message<"berth.v1.AddCommentResponse"> & {
    /**
     * The comment as stored.
     *
     * @generated from field: berth.v1.Comment comment = 1;
     */
    comment?: Comment | undefined;
};
/**
 * Describes the message berth.v1.AddCommentResponse.
 * Use `create(AddCommentResponseSchema)` to create a new message.
 */
export declare const AddCommentResponseSchema: GenMessage<AddCommentResponse>;
/**
 * Request of ListComments.
 *
 * @generated from message berth.v1.ListCommentsRequest
 */
export type ListCommentsRequest = Message<"berth.v1.ListCommentsRequest"> & {
    /**
     * The changeset (UUID).
     *
     * @generated from field: string changeset_id = 1;
     */
    changesetId: string;
    /**
     * Also the resolved comments; by default only the open ones.
     *
     * @generated from field: bool include_resolved = 2;
     */
    includeResolved: boolean;
    /**
     * At most this many comments (0: the default, 100; at most 1000, more is INVALID_ARGUMENT).
     *
     * @generated from field: uint32 page_size = 3;
     */
    pageSize: number;
    /**
     * The next_page_token of the previous page; empty for the first.
     *
     * @generated from field: string page_token = 4;
     */
    pageToken: string;
};
/**
 * Describes the message berth.v1.ListCommentsRequest.
 * Use `create(ListCommentsRequestSchema)` to create a new message.
 */
export declare const ListCommentsRequestSchema: GenMessage<ListCommentsRequest>;
/**
 * Response of ListComments.
 *
 * @generated from message berth.v1.ListCommentsResponse
 */
export type ListCommentsResponse = Message<"berth.v1.ListCommentsResponse"> & {
    /**
     * The page's comments, oldest first.
     *
     * @generated from field: repeated berth.v1.Comment comments = 1;
     */
    comments: Comment[];
    /**
     * Pass as page_token to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 2;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListCommentsResponse.
 * Use `create(ListCommentsResponseSchema)` to create a new message.
 */
export declare const ListCommentsResponseSchema: GenMessage<ListCommentsResponse>;
/**
 * Request of ResolveComment.
 *
 * @generated from message berth.v1.ResolveCommentRequest
 */
export type ResolveCommentRequest = Message<"berth.v1.ResolveCommentRequest"> & {
    /**
     * The comment (UUID).
     *
     * @generated from field: string comment_id = 1;
     */
    commentId: string;
};
/**
 * Describes the message berth.v1.ResolveCommentRequest.
 * Use `create(ResolveCommentRequestSchema)` to create a new message.
 */
export declare const ResolveCommentRequestSchema: GenMessage<ResolveCommentRequest>;
/**
 * Response of ResolveComment.
 *
 * @generated from message berth.v1.ResolveCommentResponse
 */
export type ResolveCommentResponse = Message<"berth.v1.ResolveCommentResponse"> & {
    /**
     * The comment, resolved (by the first resolver, when it already was).
     *
     * @generated from field: berth.v1.Comment comment = 1;
     */
    comment?: Comment | undefined;
};
/**
 * Describes the message berth.v1.ResolveCommentResponse.
 * Use `create(ResolveCommentResponseSchema)` to create a new message.
 */
export declare const ResolveCommentResponseSchema: GenMessage<ResolveCommentResponse>;
/**
 * Who abandoned a session.
 *
 * @generated from enum berth.v1.AbandonCause
 */
export declare enum AbandonCause {
    /**
     * Not set: explicit.
     *
     * @generated from enum value: ABANDON_CAUSE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * The agent gave up the work.
     *
     * @generated from enum value: ABANDON_CAUSE_EXPLICIT = 1;
     */
    EXPLICIT = 1,
    /**
     * An operator (admin role).
     *
     * @generated from enum value: ABANDON_CAUSE_ADMIN = 2;
     */
    ADMIN = 2
}
/**
 * Describes the enum berth.v1.AbandonCause.
 */
export declare const AbandonCauseSchema: GenEnum<AbandonCause>;
/**
 * What an id prefix is resolved among (ResolveIdPrefix).
 *
 * @generated from enum berth.v1.IdKind
 */
export declare enum IdKind {
    /**
     * Not allowed.
     *
     * @generated from enum value: ID_KIND_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Session ids, a resumed session's old id included.
     *
     * @generated from enum value: ID_KIND_SESSION = 1;
     */
    SESSION = 1,
    /**
     * Workspace ids.
     *
     * @generated from enum value: ID_KIND_WORKSPACE = 2;
     */
    WORKSPACE = 2,
    /**
     * Turn ids.
     *
     * @generated from enum value: ID_KIND_TURN = 3;
     */
    TURN = 3,
    /**
     * Changeset ids.
     *
     * @generated from enum value: ID_KIND_CHANGESET = 4;
     */
    CHANGESET = 4,
    /**
     * Review comment ids (those of the changesets the caller may read).
     *
     * @generated from enum value: ID_KIND_COMMENT = 5;
     */
    COMMENT = 5
}
/**
 * Describes the enum berth.v1.IdKind.
 */
export declare const IdKindSchema: GenEnum<IdKind>;
/**
 * WorkspaceService is the registry of session workspaces: repositories, workspaces,
 * changesets, the session lifecycle (liveness, strand, resume, abandon) and its events.
 *
 * Errors carry a google.rpc.ErrorInfo (domain "berth") whose reason is stable:
 * REPOSITORY_NOT_FOUND, SESSION_NOT_FOUND, SESSION_STRANDED, SESSION_ABANDONED,
 * INVALID_TRANSITION, CHANGESET_TERMINAL, ALREADY_RESUMED, ... (see docs/errors.md).
 * INVALID_ARGUMENT carries a google.rpc.BadRequest naming each bad field.
 *
 * @generated from service berth.v1.WorkspaceService
 */
export declare const WorkspaceService: GenService<{
    /**
     * Registers a repository. With a source_path, the path must be a git repository on the
     * server's disk and the caller needs the admin role when auth is on.
     *
     * @generated from rpc berth.v1.WorkspaceService.RegisterRepository
     */
    registerRepository: {
        methodKind: "unary";
        input: typeof RegisterRepositoryRequestSchema;
        output: typeof RegisterRepositoryResponseSchema;
    };
    /**
     * Lists the registered repositories the caller is granted (every one for an admin), by name.
     *
     * @generated from rpc berth.v1.WorkspaceService.ListRepositories
     */
    listRepositories: {
        methodKind: "unary";
        input: typeof ListRepositoriesRequestSchema;
        output: typeof ListRepositoriesResponseSchema;
    };
    /**
     * Changes a repository's settings: independent_review (Repository). Admin only (PERMISSION_DENIED
     * ROLE_REQUIRED otherwise, when auth is on); the change holds on every instance at once.
     *
     * @generated from rpc berth.v1.WorkspaceService.UpdateRepository
     */
    updateRepository: {
        methodKind: "unary";
        input: typeof UpdateRepositoryRequestSchema;
        output: typeof UpdateRepositoryResponseSchema;
    };
    /**
     * Opens a workspace for a session, minting what the request leaves out.
     *
     * @generated from rpc berth.v1.WorkspaceService.CreateWorkspace
     */
    createWorkspace: {
        methodKind: "unary";
        input: typeof CreateWorkspaceRequestSchema;
        output: typeof CreateWorkspaceResponseSchema;
    };
    /**
     * Reads a workspace by session id; works for stranded and abandoned sessions too.
     *
     * @generated from rpc berth.v1.WorkspaceService.GetWorkspace
     */
    getWorkspace: {
        methodKind: "unary";
        input: typeof GetWorkspaceRequestSchema;
        output: typeof GetWorkspaceResponseSchema;
    };
    /**
     * Destroys a workspace; its session ends.
     *
     * @generated from rpc berth.v1.WorkspaceService.DestroyWorkspace
     */
    destroyWorkspace: {
        methodKind: "unary";
        input: typeof DestroyWorkspaceRequestSchema;
        output: typeof DestroyWorkspaceResponseSchema;
    };
    /**
     * Lists the sessions of a repository in the states asked for (active and stranded by default), a page at a time.
     *
     * @generated from rpc berth.v1.WorkspaceService.ListSessions
     */
    listSessions: {
        methodKind: "unary";
        input: typeof ListSessionsRequestSchema;
        output: typeof ListSessionsResponseSchema;
    };
    /**
     * Counts live sessions.
     *
     * @generated from rpc berth.v1.WorkspaceService.CountActive
     */
    countActive: {
        methodKind: "unary";
        input: typeof CountActiveRequestSchema;
        output: typeof CountActiveResponseSchema;
    };
    /**
     * Moves a changeset to another state; two racing transitions never both win. SUBMITTED,
     * VERIFYING and APPROVED may go back to DRAFT (sent back for changes); every move is recorded
     * in the changeset's history (GetChangeset).
     *
     * @generated from rpc berth.v1.WorkspaceService.TransitionChangeset
     */
    transitionChangeset: {
        methodKind: "unary";
        input: typeof TransitionChangesetRequestSchema;
        output: typeof TransitionChangesetResponseSchema;
    };
    /**
     * Keeps a session connected for BERTH_SESSION_LEASE_MS.
     *
     * @generated from rpc berth.v1.WorkspaceService.Heartbeat
     */
    heartbeat: {
        methodKind: "unary";
        input: typeof HeartbeatRequestSchema;
        output: typeof HeartbeatResponseSchema;
    };
    /**
     * Keeps a session connected for as long as the stream is open, and streams the
     * session's own notices (the lifecycle events that concern it).
     *
     * @generated from rpc berth.v1.WorkspaceService.AttachSession
     */
    attachSession: {
        methodKind: "server_streaming";
        input: typeof AttachSessionRequestSchema;
        output: typeof AttachSessionResponseSchema;
    };
    /**
     * Strands a session: its unfinished work is kept for a later ResumeSession. Idempotent.
     *
     * @generated from rpc berth.v1.WorkspaceService.StrandSession
     */
    strandSession: {
        methodKind: "unary";
        input: typeof StrandSessionRequestSchema;
        output: typeof StrandSessionResponseSchema;
    };
    /**
     * Resumes a stranded session under a new session id. Exactly one resume of a given
     * session wins; the others get ALREADY_RESUMED with the winner's id.
     *
     * @generated from rpc berth.v1.WorkspaceService.ResumeSession
     */
    resumeSession: {
        methodKind: "unary";
        input: typeof ResumeSessionRequestSchema;
        output: typeof ResumeSessionResponseSchema;
    };
    /**
     * Abandons a session: its overlay is deleted, and its changeset rejected unless another live
     * session works on it. Idempotent.
     *
     * @generated from rpc berth.v1.WorkspaceService.AbandonSession
     */
    abandonSession: {
        methodKind: "unary";
        input: typeof AbandonSessionRequestSchema;
        output: typeof AbandonSessionResponseSchema;
    };
    /**
     * Streams stored events after after_seq, then live ones, with no gap and no duplicate. With
     * auth on, only events of repositories the caller is granted (see docs/security.md).
     *
     * @generated from rpc berth.v1.WorkspaceService.WatchEvents
     */
    watchEvents: {
        methodKind: "server_streaming";
        input: typeof WatchEventsRequestSchema;
        output: typeof WatchEventsResponseSchema;
    };
    /**
     * Writes a file into the session's overlay, claiming every symbol the write changes (all or
     * nothing: SYMBOL_LOCKED names the holder). Stored in PostgreSQL before it returns.
     *
     * @generated from rpc berth.v1.WorkspaceService.WriteFile
     */
    writeFile: {
        methodKind: "unary";
        input: typeof WriteFileRequestSchema;
        output: typeof WriteFileResponseSchema;
    };
    /**
     * Deletes a file in the session's overlay (a tombstone over the base), with the same claims as a write.
     *
     * @generated from rpc berth.v1.WorkspaceService.DeleteFile
     */
    deleteFile: {
        methodKind: "unary";
        input: typeof DeleteFileRequestSchema;
        output: typeof DeleteFileResponseSchema;
    };
    /**
     * Reads a file: the overlay first, then the repository's source at the base commit.
     *
     * @generated from rpc berth.v1.WorkspaceService.ReadFile
     */
    readFile: {
        methodKind: "unary";
        input: typeof ReadFileRequestSchema;
        output: typeof ReadFileResponseSchema;
    };
    /**
     * Lists the merged view of the base tree and the overlay.
     *
     * @generated from rpc berth.v1.WorkspaceService.ListFiles
     */
    listFiles: {
        methodKind: "unary";
        input: typeof ListFilesRequestSchema;
        output: typeof ListFilesResponseSchema;
    };
    /**
     * Claims symbols before editing them; all or nothing.
     *
     * @generated from rpc berth.v1.WorkspaceService.ClaimSymbols
     */
    claimSymbols: {
        methodKind: "unary";
        input: typeof ClaimSymbolsRequestSchema;
        output: typeof ClaimSymbolsResponseSchema;
    };
    /**
     * Releases claims the session holds.
     *
     * @generated from rpc berth.v1.WorkspaceService.ReleaseSymbols
     */
    releaseSymbols: {
        methodKind: "unary";
        input: typeof ReleaseSymbolsRequestSchema;
        output: typeof ReleaseSymbolsResponseSchema;
    };
    /**
     * Lists the claims a session holds, by path and symbol (a stranded or ended session holds none).
     *
     * @generated from rpc berth.v1.WorkspaceService.ListClaims
     */
    listClaims: {
        methodKind: "unary";
        input: typeof ListClaimsRequestSchema;
        output: typeof ListClaimsResponseSchema;
    };
    /**
     * Says who else touched a file and which of its symbols, e.g. "create_task modified by agent-2".
     *
     * @generated from rpc berth.v1.WorkspaceService.DescribeOtherModifiers
     */
    describeOtherModifiers: {
        methodKind: "unary";
        input: typeof DescribeOtherModifiersRequestSchema;
        output: typeof DescribeOtherModifiersResponseSchema;
    };
    /**
     * Writes the changeset's overlay (every session of it, combined) as one commit on its base
     * commit into the registered repository, on the ref refs/heads/berth/<changeset_id>. The same
     * overlay, message and author give the same commit (docs/landing-work.md). Refused with
     * OVERLAY_CONFLICT (paths in metadata), BASE_MISMATCH, NOTHING_TO_COMMIT, NO_SOURCE_REPOSITORY.
     *
     * @generated from rpc berth.v1.WorkspaceService.CommitChangeset
     */
    commitChangeset: {
        methodKind: "unary";
        input: typeof CommitChangesetRequestSchema;
        output: typeof CommitChangesetResponseSchema;
    };
    /**
     * ---- diffs and rebase (issue 15) ----
     * The unified diff of the session's overlay against its base commit (git's format, which
     * `git apply` takes), with a summary per path.
     *
     * @generated from rpc berth.v1.WorkspaceService.DiffWorkspace
     */
    diffWorkspace: {
        methodKind: "unary";
        input: typeof DiffWorkspaceRequestSchema;
        output: typeof DiffWorkspaceResponseSchema;
    };
    /**
     * The unified diff of every session of a changeset against their base, combined; two
     * sessions that leave a path different are reported as a conflict on that path.
     *
     * @generated from rpc berth.v1.WorkspaceService.DiffChangeset
     */
    diffChangeset: {
        methodKind: "unary";
        input: typeof DiffChangesetRequestSchema;
        output: typeof DiffChangesetResponseSchema;
    };
    /**
     * Sets or clears a repository's check on VERIFYING. Admins only (PERMISSION_DENIED
     * ROLE_REQUIRED otherwise): the command runs on the server.
     *
     * @generated from rpc berth.v1.WorkspaceService.SetRepositoryCheck
     */
    setRepositoryCheck: {
        methodKind: "unary";
        input: typeof SetRepositoryCheckRequestSchema;
        output: typeof SetRepositoryCheckResponseSchema;
    };
    /**
     * The runs of its repository's check on a changeset, oldest first, with their output's tail.
     * Readable by whoever may diff the changeset.
     *
     * @generated from rpc berth.v1.WorkspaceService.ListVerifications
     */
    listVerifications: {
        methodKind: "unary";
        input: typeof ListVerificationsRequestSchema;
        output: typeof ListVerificationsResponseSchema;
    };
    /**
     * Moves a workspace to a new base commit, merging its overlay three-way per file; the files
     * that conflict are listed and hold git's conflict-marker version in the overlay.
     *
     * @generated from rpc berth.v1.WorkspaceService.RebaseWorkspace
     */
    rebaseWorkspace: {
        methodKind: "unary";
        input: typeof RebaseWorkspaceRequestSchema;
        output: typeof RebaseWorkspaceResponseSchema;
    };
    /**
     * ---- short ids (issue 27) ----
     * The ids of one kind that start with a prefix (the short ids the console, the events and the
     * berth command show), among those the caller may act on: its own sessions, workspaces and
     * turns and the changesets it works on, in repositories it is granted (every one for an
     * admin). Read from PostgreSQL with a range on the id's index, so every instance answers alike.
     *
     * @generated from rpc berth.v1.WorkspaceService.ResolveIdPrefix
     */
    resolveIdPrefix: {
        methodKind: "unary";
        input: typeof ResolveIdPrefixRequestSchema;
        output: typeof ResolveIdPrefixResponseSchema;
    };
    /**
     * ---- reviewing changesets (issue 29) ----
     * A repository's changesets, newest first, optionally only those in some states (what waits
     * for review: SUBMITTED, VERIFYING, APPROVED). Paged like ListSessions. Needs the repository.
     *
     * @generated from rpc berth.v1.WorkspaceService.ListChangesets
     */
    listChangesets: {
        methodKind: "unary";
        input: typeof ListChangesetsRequestSchema;
        output: typeof ListChangesetsResponseSchema;
    };
    /**
     * One changeset with its history (every transition, with reason and who), its sessions, its
     * branch and merge target, and the states the caller may move it to now. Readable by whoever
     * may DiffChangeset it (an agent that works on it, or an admin).
     *
     * @generated from rpc berth.v1.WorkspaceService.GetChangeset
     */
    getChangeset: {
        methodKind: "unary";
        input: typeof GetChangesetRequestSchema;
        output: typeof GetChangesetResponseSchema;
    };
    /**
     * ---- review comments (issue 29) ----
     * Comments on a changeset, on one of its paths, or on a line of a path; stored with the changeset
     * (never deleted) and announced as comment.added. Whoever may read the changeset (DiffChangeset's
     * rule: an agent that works on it, or an admin) may comment, list and resolve.
     *
     * @generated from rpc berth.v1.WorkspaceService.AddComment
     */
    addComment: {
        methodKind: "unary";
        input: typeof AddCommentRequestSchema;
        output: typeof AddCommentResponseSchema;
    };
    /**
     * The comments of a changeset, oldest first, a page at a time; open ones only unless asked.
     *
     * @generated from rpc berth.v1.WorkspaceService.ListComments
     */
    listComments: {
        methodKind: "unary";
        input: typeof ListCommentsRequestSchema;
        output: typeof ListCommentsResponseSchema;
    };
    /**
     * Marks a comment resolved (comment.resolved). Idempotent: a resolved comment is answered as it is.
     *
     * @generated from rpc berth.v1.WorkspaceService.ResolveComment
     */
    resolveComment: {
        methodKind: "unary";
        input: typeof ResolveCommentRequestSchema;
        output: typeof ResolveCommentResponseSchema;
    };
}>;
