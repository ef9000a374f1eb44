import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Event } from "./event_pb.js";
import type { TurnOutcome } from "./types_pb.js";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file berth/v1/turn_service.proto.
 */
export declare const file_berth_v1_turn_service: GenFile;
/**
 * A turn.
 *
 * @generated from message berth.v1.Turn
 */
export type Turn = Message<"berth.v1.Turn"> & {
    /**
     * UUID.
     *
     * @generated from field: string turn_id = 1;
     */
    turnId: string;
    /**
     * The session.
     *
     * @generated from field: string session_id = 2;
     */
    sessionId: string;
    /**
     * The workspace.
     *
     * @generated from field: string workspace_id = 3;
     */
    workspaceId: string;
    /**
     * The client's id, if it gave one.
     *
     * @generated from field: string client_turn_id = 4;
     */
    clientTurnId: string;
    /**
     * Its state.
     *
     * @generated from field: berth.v1.TurnState state = 5;
     */
    state: TurnState;
    /**
     * How it ended (ENDED only).
     *
     * @generated from field: berth.v1.TurnOutcome outcome = 6;
     */
    outcome: TurnOutcome;
    /**
     * The environment's directory; empty unless the caller is an admin (or auth is off).
     *
     * @generated from field: string environment_path = 7;
     */
    environmentPath: string;
    /**
     * Whether it started in a warm environment.
     *
     * @generated from field: bool warm = 8;
     */
    warm: boolean;
    /**
     * When it began.
     *
     * @generated from field: google.protobuf.Timestamp started_at = 9;
     */
    startedAt?: Timestamp | undefined;
    /**
     * When it stopped running.
     *
     * @generated from field: google.protobuf.Timestamp ended_at = 10;
     */
    endedAt?: Timestamp | undefined;
    /**
     * The exit status of the command the turn ran, as the client that ended it reported it
     * (EndTurnRequest.exit_code); absent when it reported none (or the command was killed by a signal).
     *
     * @generated from field: optional int32 exit_code = 11;
     */
    exitCode?: number | undefined;
    /**
     * The signal that killed the command the turn ran (e.g. "SIGTERM"), as the client that ended it
     * reported it (EndTurnRequest.exit_signal); empty when it reported none.
     *
     * @generated from field: string exit_signal = 12;
     */
    exitSignal: string;
    /**
     * The messages of the commits the agent made in its environment during the turn (`git commit`
     * there), oldest first, read when EndTurn captured the environment: the commits between the
     * workspace's base commit and the environment's HEAD that no earlier turn in the same
     * environment kept. At most 64 KiB in all (the oldest dropped first). Empty for a turn not
     * ended by EndTurn. CommitChangeset offers them as the default message (docs/landing-work.md).
     *
     * @generated from field: repeated string commit_messages = 13;
     */
    commitMessages: string[];
};
/**
 * Describes the message berth.v1.Turn.
 * Use `create(TurnSchema)` to create a new message.
 */
export declare const TurnSchema: GenMessage<Turn>;
/**
 * One entry of a workspace map.
 *
 * @generated from message berth.v1.MapEntry
 */
export type MapEntry = Message<"berth.v1.MapEntry"> & {
    /**
     * Path relative to the environment.
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * A directory.
     *
     * @generated from field: bool is_dir = 2;
     */
    isDir: boolean;
};
/**
 * Describes the message berth.v1.MapEntry.
 * Use `create(MapEntrySchema)` to create a new message.
 */
export declare const MapEntrySchema: GenMessage<MapEntry>;
/**
 * A names-only, gitignore-aware tree of an environment.
 *
 * @generated from message berth.v1.WorkspaceMap
 */
export type WorkspaceMap = Message<"berth.v1.WorkspaceMap"> & {
    /**
     * How it was obtained.
     *
     * @generated from field: berth.v1.MapStatus status = 1;
     */
    status: MapStatus;
    /**
     * Rendered text, with a "showing N of M" note when truncated.
     *
     * @generated from field: string text = 2;
     */
    text: string;
    /**
     * The entries shown.
     *
     * @generated from field: repeated berth.v1.MapEntry entries = 3;
     */
    entries: MapEntry[];
    /**
     * Entries shown.
     *
     * @generated from field: uint32 shown = 4;
     */
    shown: number;
    /**
     * Entries found.
     *
     * @generated from field: uint32 total = 5;
     */
    total: number;
    /**
     * Why there is no map (SKIPPED, FAILED).
     *
     * @generated from field: string reason = 6;
     */
    reason: string;
};
/**
 * Describes the message berth.v1.WorkspaceMap.
 * Use `create(WorkspaceMapSchema)` to create a new message.
 */
export declare const WorkspaceMapSchema: GenMessage<WorkspaceMap>;
/**
 * Request of BeginTurn.
 *
 * @generated from message berth.v1.BeginTurnRequest
 */
export type BeginTurnRequest = Message<"berth.v1.BeginTurnRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * The client's id for this turn (at most 128 characters): a retried BeginTurn with the same id returns the same turn.
     *
     * @generated from field: string client_turn_id = 2;
     */
    clientTurnId: string;
    /**
     * What to do when a turn is running.
     *
     * @generated from field: berth.v1.OnBusy on_busy = 3;
     */
    onBusy: OnBusy;
    /**
     * Refuse (PERMISSION_DENIED ROLE_REQUIRED) before anything begins when the caller would not be
     * shown environment_path (auth on and the caller not an admin): for a client that must work in
     * the directory itself (`berth run`), a turn without it is of no use.
     *
     * @generated from field: bool require_environment_path = 4;
     */
    requireEnvironmentPath: boolean;
};
/**
 * Describes the message berth.v1.BeginTurnRequest.
 * Use `create(BeginTurnRequestSchema)` to create a new message.
 */
export declare const BeginTurnRequestSchema: GenMessage<BeginTurnRequest>;
/**
 * Response of BeginTurn.
 *
 * @generated from message berth.v1.BeginTurnResponse
 */
export type BeginTurnResponse = Message<"berth.v1.BeginTurnResponse"> & {
    /**
     * The turn.
     *
     * @generated from field: string turn_id = 1;
     */
    turnId: string;
    /**
     * The environment's directory, where the tools run; empty unless the caller is an admin (or
     * auth is off): a server-side path.
     *
     * @generated from field: string environment_path = 2;
     */
    environmentPath: string;
    /**
     * Whether the environment was reused warm.
     *
     * @generated from field: bool warm = 3;
     */
    warm: boolean;
    /**
     * The workspace map.
     *
     * @generated from field: berth.v1.WorkspaceMap workspace_map = 4;
     */
    workspaceMap?: WorkspaceMap | undefined;
    /**
     * The turn this one superseded, if any.
     *
     * @generated from field: string superseded_turn_id = 5;
     */
    supersededTurnId: string;
    /**
     * The instance whose disk holds the environment (the one that served the turn, a forwarded
     * BeginTurn's included); unset when environment_path is empty (not an admin).
     *
     * @generated from field: berth.v1.InstanceIdentity environment_instance = 6;
     */
    environmentInstance?: InstanceIdentity | undefined;
};
/**
 * Describes the message berth.v1.BeginTurnResponse.
 * Use `create(BeginTurnResponseSchema)` to create a new message.
 */
export declare const BeginTurnResponseSchema: GenMessage<BeginTurnResponse>;
/**
 * How an instance of Berth is known: where a client that needs its disk must run.
 *
 * @generated from message berth.v1.InstanceIdentity
 */
export type InstanceIdentity = Message<"berth.v1.InstanceIdentity"> & {
    /**
     * The instance's id (instances.id in the database; a new one at each start).
     *
     * @generated from field: string instance_id = 1;
     */
    instanceId: string;
    /**
     * Its stable name (BERTH_INSTANCE_NAME, by default hostname:grpc-port).
     *
     * @generated from field: string instance_name = 2;
     */
    instanceName: string;
    /**
     * The host:port of its gRPC listener that other instances dial (BERTH_ADVERTISE_ADDR).
     *
     * @generated from field: string advertise_address = 3;
     */
    advertiseAddress: string;
};
/**
 * Describes the message berth.v1.InstanceIdentity.
 * Use `create(InstanceIdentitySchema)` to create a new message.
 */
export declare const InstanceIdentitySchema: GenMessage<InstanceIdentity>;
/**
 * Request of EndTurn.
 *
 * @generated from message berth.v1.EndTurnRequest
 */
export type EndTurnRequest = Message<"berth.v1.EndTurnRequest"> & {
    /**
     * The turn (UUID).
     *
     * @generated from field: string turn_id = 1;
     */
    turnId: string;
    /**
     * How it ended.
     *
     * @generated from field: berth.v1.TurnOutcome outcome = 2;
     */
    outcome: TurnOutcome;
    /**
     * The exit status of the command the turn ran (0 to 255), recorded with the turn (Turn.exit_code);
     * unset: none recorded. Not with exit_signal.
     *
     * @generated from field: optional int32 exit_code = 3;
     */
    exitCode?: number | undefined;
    /**
     * The signal that killed the command (a name such as "SIGTERM", "SIG" and capitals or digits),
     * recorded with the turn (Turn.exit_signal); empty: none recorded. Not with exit_code.
     *
     * @generated from field: string exit_signal = 4;
     */
    exitSignal: string;
};
/**
 * Describes the message berth.v1.EndTurnRequest.
 * Use `create(EndTurnRequestSchema)` to create a new message.
 */
export declare const EndTurnRequestSchema: GenMessage<EndTurnRequest>;
/**
 * Response of EndTurn.
 *
 * @generated from message berth.v1.EndTurnResponse
 */
export type EndTurnResponse = Message<"berth.v1.EndTurnResponse"> & {
    /**
     * The turn, ended.
     *
     * @generated from field: berth.v1.Turn turn = 1;
     */
    turn?: Turn | undefined;
    /**
     * Paths whose changes in the directory were captured into the overlay.
     *
     * @generated from field: repeated string captured_paths = 2;
     */
    capturedPaths: string[];
    /**
     * What capture left out on purpose (at most 200 entries): files and directories that the
     * environment's .gitignore files or the repository's capture_exclude list exclude, and files
     * over BERTH_MAX_FILE_BYTES (never read). A path of the base or of the overlay is captured
     * whatever the rules say.
     *
     * @generated from field: repeated berth.v1.LeftOutPath left_out = 3;
     */
    leftOut: LeftOutPath[];
};
/**
 * Describes the message berth.v1.EndTurnResponse.
 * Use `create(EndTurnResponseSchema)` to create a new message.
 */
export declare const EndTurnResponseSchema: GenMessage<EndTurnResponse>;
/**
 * A path capture did not send to the overlay.
 *
 * @generated from message berth.v1.LeftOutPath
 */
export type LeftOutPath = Message<"berth.v1.LeftOutPath"> & {
    /**
     * Repository-relative path; a directory ends with "/" (nothing under it was read).
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * Why (docs/turns.md, "What it leaves out"):
     * - gitignored: the environment's .gitignore files or .git/info/exclude match it;
     * - excluded: the repository's capture_exclude matches it;
     * - too_large: a file over BERTH_MAX_FILE_BYTES, or a .gitignore / .gitattributes over 1 MiB
     *   (its rules are not applied either); never read;
     * - git_directory: a .git in any spelling: never the overlay's, never read;
     * - symlink: a symbolic link the agent made (the base's own links are not listed); never followed;
     * - special_file: a FIFO, socket or device node; never opened;
     * - hardlink: a regular file with more than one name: another name may be outside the
     *   environment (a server file, a token), so it is never read; copy the file instead;
     * - submodule: a directory the base commit holds as a submodule (gitlink) that is not empty: its
     *   content cannot be overlay files; the directory is kept at teardown (under .unsaved/, with a
     *   turn.capture_failed event), never deleted unsaid.
     * hardlink and submodule paths hold what the agent wrote: a teardown keeps the directory for them.
     *
     * @generated from field: string reason = 2;
     */
    reason: string;
};
/**
 * Describes the message berth.v1.LeftOutPath.
 * Use `create(LeftOutPathSchema)` to create a new message.
 */
export declare const LeftOutPathSchema: GenMessage<LeftOutPath>;
/**
 * Request of CancelTurn.
 *
 * @generated from message berth.v1.CancelTurnRequest
 */
export type CancelTurnRequest = Message<"berth.v1.CancelTurnRequest"> & {
    /**
     * The turn (UUID).
     *
     * @generated from field: string turn_id = 1;
     */
    turnId: string;
};
/**
 * Describes the message berth.v1.CancelTurnRequest.
 * Use `create(CancelTurnRequestSchema)` to create a new message.
 */
export declare const CancelTurnRequestSchema: GenMessage<CancelTurnRequest>;
/**
 * Response of CancelTurn.
 *
 * @generated from message berth.v1.CancelTurnResponse
 */
export type CancelTurnResponse = Message<"berth.v1.CancelTurnResponse"> & {
    /**
     * The turn was running and is now cancelled.
     *
     * @generated from field: bool cancelled = 1;
     */
    cancelled: boolean;
    /**
     * Its environment's teardown has completed.
     *
     * @generated from field: bool settled = 2;
     */
    settled: boolean;
};
/**
 * Describes the message berth.v1.CancelTurnResponse.
 * Use `create(CancelTurnResponseSchema)` to create a new message.
 */
export declare const CancelTurnResponseSchema: GenMessage<CancelTurnResponse>;
/**
 * Request of TurnHeartbeat.
 *
 * @generated from message berth.v1.TurnHeartbeatRequest
 */
export type TurnHeartbeatRequest = Message<"berth.v1.TurnHeartbeatRequest"> & {
    /**
     * The turn (UUID).
     *
     * @generated from field: string turn_id = 1;
     */
    turnId: string;
};
/**
 * Describes the message berth.v1.TurnHeartbeatRequest.
 * Use `create(TurnHeartbeatRequestSchema)` to create a new message.
 */
export declare const TurnHeartbeatRequestSchema: GenMessage<TurnHeartbeatRequest>;
/**
 * Response of TurnHeartbeat.
 *
 * @generated from message berth.v1.TurnHeartbeatResponse
 */
export type TurnHeartbeatResponse = Message<"berth.v1.TurnHeartbeatResponse"> & {
    /**
     * Still the session's running turn; false once superseded, cancelled or ended.
     *
     * @generated from field: bool current = 1;
     */
    current: boolean;
};
/**
 * Describes the message berth.v1.TurnHeartbeatResponse.
 * Use `create(TurnHeartbeatResponseSchema)` to create a new message.
 */
export declare const TurnHeartbeatResponseSchema: GenMessage<TurnHeartbeatResponse>;
/**
 * Request of ListTurns.
 *
 * @generated from message berth.v1.ListTurnsRequest
 */
export type ListTurnsRequest = Message<"berth.v1.ListTurnsRequest"> & {
    /**
     * The session (UUID); empty for every running turn of this server.
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * At most this many turns (0: the default, 100; at most 1000, more is INVALID_ARGUMENT).
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
 * Describes the message berth.v1.ListTurnsRequest.
 * Use `create(ListTurnsRequestSchema)` to create a new message.
 */
export declare const ListTurnsRequestSchema: GenMessage<ListTurnsRequest>;
/**
 * Response of ListTurns.
 *
 * @generated from message berth.v1.ListTurnsResponse
 */
export type ListTurnsResponse = Message<"berth.v1.ListTurnsResponse"> & {
    /**
     * The page's turns, newest first.
     *
     * @generated from field: repeated berth.v1.Turn turns = 1;
     */
    turns: Turn[];
    /**
     * Pass as page_token to get the next page; empty on the last.
     *
     * @generated from field: string next_page_token = 20;
     */
    nextPageToken: string;
};
/**
 * Describes the message berth.v1.ListTurnsResponse.
 * Use `create(ListTurnsResponseSchema)` to create a new message.
 */
export declare const ListTurnsResponseSchema: GenMessage<ListTurnsResponse>;
/**
 * Request of WatchTurns.
 *
 * @generated from message berth.v1.WatchTurnsRequest
 */
export type WatchTurnsRequest = Message<"berth.v1.WatchTurnsRequest"> & {
    /**
     * Only this session (UUID); empty for all.
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
};
/**
 * Describes the message berth.v1.WatchTurnsRequest.
 * Use `create(WatchTurnsRequestSchema)` to create a new message.
 */
export declare const WatchTurnsRequestSchema: GenMessage<WatchTurnsRequest>;
/**
 * A message of WatchTurns.
 *
 * @generated from message berth.v1.WatchTurnsResponse
 */
export type WatchTurnsResponse = Message<"berth.v1.WatchTurnsResponse"> & {
    /**
     * A turn.* or env.evicted event.
     *
     * @generated from field: berth.v1.Event event = 1;
     */
    event?: Event | undefined;
};
/**
 * Describes the message berth.v1.WatchTurnsResponse.
 * Use `create(WatchTurnsResponseSchema)` to create a new message.
 */
export declare const WatchTurnsResponseSchema: GenMessage<WatchTurnsResponse>;
/**
 * Request of GetPoolStats.
 *
 * @generated from message berth.v1.GetPoolStatsRequest
 */
export type GetPoolStatsRequest = Message<"berth.v1.GetPoolStatsRequest"> & {};
/**
 * Describes the message berth.v1.GetPoolStatsRequest.
 * Use `create(GetPoolStatsRequestSchema)` to create a new message.
 */
export declare const GetPoolStatsRequestSchema: GenMessage<GetPoolStatsRequest>;
/**
 * Response of GetPoolStats: the environments of every live instance sharing the database, summed
 * (a client behind a load balancer sees one pool).
 *
 * @generated from message berth.v1.GetPoolStatsResponse
 */
export type GetPoolStatsResponse = Message<"berth.v1.GetPoolStatsResponse"> & {
    /**
     * Environments running a turn.
     *
     * @generated from field: uint32 busy = 1;
     */
    busy: number;
    /**
     * Environments parked idle.
     *
     * @generated from field: uint32 idle = 2;
     */
    idle: number;
    /**
     * Environments parked awaiting approval.
     *
     * @generated from field: uint32 awaiting_approval = 3;
     */
    awaitingApproval: number;
    /**
     * BERTH_ENV_POOL_MAX of each live instance, summed.
     *
     * @generated from field: uint32 capacity = 4;
     */
    capacity: number;
    /**
     * Evictions by reason since start.
     *
     * @generated from field: map<string, uint64> evictions = 5;
     */
    evictions: {
        [key: string]: bigint;
    };
    /**
     * Turns that began in a warm environment.
     *
     * @generated from field: uint64 warm_acquires = 6;
     */
    warmAcquires: bigint;
    /**
     * Turns that materialised their environment.
     *
     * @generated from field: uint64 cold_acquires = 7;
     */
    coldAcquires: bigint;
    /**
     * Turns that ran unreserved because the pool was full.
     *
     * @generated from field: uint64 unreserved_turns = 8;
     */
    unreservedTurns: bigint;
};
/**
 * Describes the message berth.v1.GetPoolStatsResponse.
 * Use `create(GetPoolStatsResponseSchema)` to create a new message.
 */
export declare const GetPoolStatsResponseSchema: GenMessage<GetPoolStatsResponse>;
/**
 * Request of GetWorkspaceMap.
 *
 * @generated from message berth.v1.GetWorkspaceMapRequest
 */
export type GetWorkspaceMapRequest = Message<"berth.v1.GetWorkspaceMapRequest"> & {
    /**
     * The session (UUID).
     *
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
};
/**
 * Describes the message berth.v1.GetWorkspaceMapRequest.
 * Use `create(GetWorkspaceMapRequestSchema)` to create a new message.
 */
export declare const GetWorkspaceMapRequestSchema: GenMessage<GetWorkspaceMapRequest>;
/**
 * Response of GetWorkspaceMap.
 *
 * @generated from message berth.v1.GetWorkspaceMapResponse
 */
export type GetWorkspaceMapResponse = Message<"berth.v1.GetWorkspaceMapResponse"> & {
    /**
     * The map.
     *
     * @generated from field: berth.v1.WorkspaceMap workspace_map = 1;
     */
    workspaceMap?: WorkspaceMap | undefined;
};
/**
 * Describes the message berth.v1.GetWorkspaceMapResponse.
 * Use `create(GetWorkspaceMapResponseSchema)` to create a new message.
 */
export declare const GetWorkspaceMapResponseSchema: GenMessage<GetWorkspaceMapResponse>;
/**
 * What BeginTurn does when the session already has a running turn.
 *
 * @generated from enum berth.v1.OnBusy
 */
export declare enum OnBusy {
    /**
     * Not set: SUPERSEDE.
     *
     * @generated from enum value: ON_BUSY_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Cancel the running turn, tear its environment down, and start the new one.
     *
     * @generated from enum value: ON_BUSY_SUPERSEDE = 1;
     */
    SUPERSEDE = 1,
    /**
     * Refuse with FAILED_PRECONDITION TURN_IN_PROGRESS; the running turn is untouched.
     *
     * @generated from enum value: ON_BUSY_REJECT = 2;
     */
    REJECT = 2
}
/**
 * Describes the enum berth.v1.OnBusy.
 */
export declare const OnBusySchema: GenEnum<OnBusy>;
/**
 * A turn's state.
 *
 * @generated from enum berth.v1.TurnState
 */
export declare enum TurnState {
    /**
     * Not set.
     *
     * @generated from enum value: TURN_STATE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * Running.
     *
     * @generated from enum value: TURN_STATE_RUNNING = 1;
     */
    RUNNING = 1,
    /**
     * Ended by EndTurn.
     *
     * @generated from enum value: TURN_STATE_ENDED = 2;
     */
    ENDED = 2,
    /**
     * Replaced by a later BeginTurn.
     *
     * @generated from enum value: TURN_STATE_SUPERSEDED = 3;
     */
    SUPERSEDED = 3,
    /**
     * Cancelled by CancelTurn.
     *
     * @generated from enum value: TURN_STATE_CANCELLED = 4;
     */
    CANCELLED = 4
}
/**
 * Describes the enum berth.v1.TurnState.
 */
export declare const TurnStateSchema: GenEnum<TurnState>;
/**
 * How a workspace map was obtained.
 *
 * @generated from enum berth.v1.MapStatus
 */
export declare enum MapStatus {
    /**
     * Not set.
     *
     * @generated from enum value: MAP_STATUS_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * A fresh map.
     *
     * @generated from enum value: MAP_STATUS_OK = 1;
     */
    OK = 1,
    /**
     * The last good map, served while a walk is in flight or after a lapsed budget.
     *
     * @generated from enum value: MAP_STATUS_STALE = 2;
     */
    STALE = 2,
    /**
     * The walk did not finish within BERTH_MAP_BUDGET_MS; no map.
     *
     * @generated from enum value: MAP_STATUS_OVER_BUDGET = 3;
     */
    OVER_BUDGET = 3,
    /**
     * No map for this directory (a home directory, a filesystem root, an opaque tree).
     *
     * @generated from enum value: MAP_STATUS_SKIPPED = 4;
     */
    SKIPPED = 4,
    /**
     * The turn was cancelled while waiting.
     *
     * @generated from enum value: MAP_STATUS_CANCELLED = 5;
     */
    CANCELLED = 5,
    /**
     * The directory could not be walked.
     *
     * @generated from enum value: MAP_STATUS_FAILED = 6;
     */
    FAILED = 6
}
/**
 * Describes the enum berth.v1.MapStatus.
 */
export declare const MapStatusSchema: GenEnum<MapStatus>;
/**
 * TurnService schedules an agent's turns in its environment: the workspace's durable working
 * directory, kept warm between turns, reserved while a turn runs, never deleted under one.
 * A second BeginTurn while a turn runs (a steer) supersedes it or is refused (TURN_IN_PROGRESS).
 *
 * @generated from service berth.v1.TurnService
 */
export declare const TurnService: GenService<{
    /**
     * Begins a turn: reserves the session's environment (warm when possible) and returns it with a workspace map.
     *
     * @generated from rpc berth.v1.TurnService.BeginTurn
     */
    beginTurn: {
        methodKind: "unary";
        input: typeof BeginTurnRequestSchema;
        output: typeof BeginTurnResponseSchema;
    };
    /**
     * Ends a turn: captures the directory's changes into the overlay, then parks or tears down the environment.
     *
     * @generated from rpc berth.v1.TurnService.EndTurn
     */
    endTurn: {
        methodKind: "unary";
        input: typeof EndTurnRequestSchema;
        output: typeof EndTurnResponseSchema;
    };
    /**
     * Cancels a turn; answers at once.
     *
     * @generated from rpc berth.v1.TurnService.CancelTurn
     */
    cancelTurn: {
        methodKind: "unary";
        input: typeof CancelTurnRequestSchema;
        output: typeof CancelTurnResponseSchema;
    };
    /**
     * Whether a turn is still the session's current turn.
     *
     * @generated from rpc berth.v1.TurnService.TurnHeartbeat
     */
    turnHeartbeat: {
        methodKind: "unary";
        input: typeof TurnHeartbeatRequestSchema;
        output: typeof TurnHeartbeatResponseSchema;
    };
    /**
     * Lists the turns of a session, or the running turns of the server.
     *
     * @generated from rpc berth.v1.TurnService.ListTurns
     */
    listTurns: {
        methodKind: "unary";
        input: typeof ListTurnsRequestSchema;
        output: typeof ListTurnsResponseSchema;
    };
    /**
     * Streams turn and environment events.
     *
     * @generated from rpc berth.v1.TurnService.WatchTurns
     */
    watchTurns: {
        methodKind: "server_streaming";
        input: typeof WatchTurnsRequestSchema;
        output: typeof WatchTurnsResponseSchema;
    };
    /**
     * The environment pool's occupancy and counters. Needs the admin role when auth is on.
     *
     * @generated from rpc berth.v1.TurnService.GetPoolStats
     */
    getPoolStats: {
        methodKind: "unary";
        input: typeof GetPoolStatsRequestSchema;
        output: typeof GetPoolStatsResponseSchema;
    };
    /**
     * The session's workspace map, computed off the critical path within a budget.
     *
     * @generated from rpc berth.v1.TurnService.GetWorkspaceMap
     */
    getWorkspaceMap: {
        methodKind: "unary";
        input: typeof GetWorkspaceMapRequestSchema;
        output: typeof GetWorkspaceMapResponseSchema;
    };
}>;
