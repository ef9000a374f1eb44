/**
 * Every reason Berth puts in a google.rpc.ErrorInfo, once: the status code it goes with, when it
 * is given and the metadata it carries. BerthError takes only these (the type below), and
 * docs/errors.md's table is rendered from this list (scripts/errors-docs.ts; CI checks it is
 * current), so a reason cannot be thrown without being documented.
 */
export interface ReasonRow {
  /** The gRPC status code name. */
  readonly code: string;
  /** Reasons that share this row's meaning; empty: the status carries no reason of its own. */
  readonly reasons: readonly string[];
  /** When it is given (Markdown). */
  readonly when: string;
  /** The ErrorInfo metadata keys (Markdown). */
  readonly metadata: string;
}

export const REASON_ROWS = [
  {
    code: "INVALID_ARGUMENT",
    reasons: ["INVALID_ARGUMENT"],
    when: "a field is missing, malformed, too long or an unknown enum value; field reasons: `REQUIRED`, `INVALID_UUID`, `TOO_LONG`, `CONTROL_CHARACTER`, `INVALID_FORMAT`, `UNKNOWN_ENUM_VALUE`, `OUT_OF_RANGE`, `RESERVED_NAME`, `PERSISTENT_ONLY`, `NOT_ABSOLUTE`, `NOT_A_GIT_REPOSITORY` (`source_path`, or a `remote_url` whose server answers that it holds no repository there), `CREDENTIALS_IN_URL`, `UNSUPPORTED_SCHEME` and `MUTUALLY_EXCLUSIVE` (`remote_url`: [landing-work.md](landing-work.md#repositories-on-a-git-server); EndTurn `exit_signal` with `exit_code`), `UNKNOWN_COMMIT` (`base_commit`, RebaseWorkspace `onto`), `TOO_MANY`, `TOO_SHORT` (a ResolveIdPrefix `prefix` of fewer than 4 hex digits), `MERGED_ONLY` (a `target_ref` on a transition other than MERGED); on paths also `EMPTY_PATH`, `ABSOLUTE_PATH`, `PARENT_SEGMENT`, `BACKSLASH`, `NUL_CHARACTER`, `GIT_DIRECTORY` (a `.git` component anywhere, any spelling: [overlay.md](overlay.md#path-rules))",
    metadata: "`field`",
  },
  {
    code: "NOT_FOUND",
    reasons: ["REPOSITORY_NOT_FOUND", "SESSION_NOT_FOUND", "CHANGESET_NOT_FOUND"],
    when: "the id names nothing",
    metadata: "the id",
  },
  {
    code: "NOT_FOUND",
    reasons: ["FILE_NOT_FOUND"],
    when: "ReadFile: the path is neither in the overlay nor in the base",
    metadata: "`path`",
  },
  {
    code: "NOT_FOUND",
    reasons: ["FILE_DELETED"],
    when: "ReadFile: the path is in the base and this workspace deleted it (ListFiles with `include_deleted` shows it with `deleted`). NOT_FOUND like any missing file — the path is not in the workspace's view and retrying changes nothing — with its own reason so the agent is told why ([overlay.md](overlay.md#deleted-files))",
    metadata: "`path`",
  },
  {
    code: "NOT_FOUND",
    reasons: ["COMMENT_NOT_FOUND"],
    when: "ResolveComment: the id names no review comment",
    metadata: "`comment_id`",
  },
  {
    code: "ALREADY_EXISTS",
    reasons: ["REPOSITORY_EXISTS", "SESSION_EXISTS"],
    when: "a name or session id is taken",
    metadata: "`name` / `session_id`",
  },
  {
    code: "ALREADY_EXISTS",
    reasons: ["REQUEST_ID_REUSED"],
    when: "CreateWorkspace: this agent already used the `request_id` in the repository for a create with other settings (mode, intent, session id, changeset or agent name); a retry with the same settings answers the workspace",
    metadata: "`request_id`, `session_id`, `workspace_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["INVALID_TRANSITION"],
    when: "the changeset cannot move from its state to the one asked",
    metadata: "`changeset_id`, `from_state`, `to_state`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["PATH_TRAVERSES_SYMLINK"],
    when: "a write's or delete's path goes through a symbolic link of the base commit that the workspace has not deleted; the overlay holds regular files only ([security.md#filesystem-safety](security.md#filesystem-safety))",
    metadata: "`field` (`path`), `path`, `symlink` (the link)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["PATH_IS_DIRECTORY", "PATH_UNDER_FILE"],
    when: "a write would make a path of the workspace's view both a file and a directory, which no git tree can hold: `PATH_IS_DIRECTORY` when the path has files below it (the base's, not deleted, or the overlay's), `PATH_UNDER_FILE` when a parent is a file; nothing changed. Delete what is in the way first ([overlay.md](overlay.md#files-and-directories))",
    metadata: "`field` (`path`), `path`, `conflicting_path` (a file below the path, or the file above it)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["TURN_IN_PROGRESS"],
    when: "BeginTurn `ON_BUSY_REJECT` while a turn runs; RebaseWorkspace while the session has a running turn (end it first: its environment holds the old base)",
    metadata: "`session_id`, `turn_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["NO_SOURCE_REPOSITORY"],
    when: "DiffWorkspace, DiffChangeset, RebaseWorkspace: the repository was registered without a `source_path`, so there is no git repository to diff or rebase against; CommitChangeset, or MERGED with a `target_ref` (without one, MERGED there only changes the state): the changeset's repository was registered without a `source_path`, so there is no git repository to land in ([landing-work.md](landing-work.md))",
    metadata: "`changeset_id`, `repo_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["CHANGESET_TERMINAL"],
    when: "the changeset is MERGED, REJECTED or CLOSED",
    metadata: "`changeset_id`, `state`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["NOTHING_TO_COMMIT"],
    when: "CommitChangeset: no live session of the changeset holds a change (MERGED then merges the commit recorded before, if any)",
    metadata: "`changeset_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["OVERLAY_CONFLICT"],
    when: "CommitChangeset (or MERGED): two live sessions of the changeset hold different versions of the same path; nothing is written",
    metadata: "`changeset_id`, `paths` (JSON array), `sessions` (JSON object: path → session ids)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["BASE_MISMATCH"],
    when: "CommitChangeset (or MERGED): the changeset's sessions that hold changes work on different base commits",
    metadata: "`changeset_id`, `bases` (JSON object: session id → base commit)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["MERGE_CONFLICT"],
    when: "MERGED: the changeset's commit and the target conflict (`git merge-tree`); the target and the changeset's state are unchanged",
    metadata: "`changeset_id`, `target_ref`, `target_commit`, `changeset_commit`, `paths` (JSON array)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["TARGET_MOVED"],
    when: "MERGED (or CommitChangeset's branch ref): the ref changed between Berth's read and its compare-and-set update; nothing changed, retry",
    metadata: "`changeset_id`, `target_ref`, `expected_commit`, `actual_commit`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["REMOTE_ACCESS_DENIED"],
    when: "a repository on a git server: the server refused this instance's credentials (ssh key, `BERTH_GIT_HTTP_HEADER_FILE`) or asked for some; nothing changed. Fix the server's credentials ([security.md](security.md#remote-credentials)), then retry",
    metadata: "`repo_id` (none at RegisterRepository), `operation` (`ls-remote`, `fetch`, `push`)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["REMOTE_NOT_A_REPOSITORY"],
    when: "a repository on a git server: the server answers that its URL holds no repository (any more: it was moved or deleted); nothing changed",
    metadata: "`repo_id`, `operation`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["REMOTE_REJECTED"],
    when: "CommitChangeset, MERGED on a repository on a git server: the server refused the push for another reason than a moved ref (a hook, a protected branch); nothing changed in Berth",
    metadata: "`changeset_id`, `target_ref`, `remote_message`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["BASE_COMMIT_GONE"],
    when: "a repository on a git server: the workspace's base commit (or the changeset's commit) is neither in this instance's mirror nor on the server any more (its history was rewritten, a branch deleted); rebase the workspace's work onto a commit the server has, from an instance whose mirror still holds the old base, or start again ([landing-work.md](landing-work.md#faults))",
    metadata: "`repo_id`, `commit`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["TARGET_NOT_FOUND"],
    when: "MERGED: the `target_ref` branch (or the one HEAD names) does not exist",
    metadata: "`changeset_id`, `target_ref`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["NO_DEFAULT_BRANCH"],
    when: "MERGED without a `target_ref`: the repository's HEAD is detached, or names no branch a `target_ref` could name (a changeset's own `berth/…` branch, a ref outside `refs/heads/`); name the `target_ref`. Nothing changed ([landing-work.md](landing-work.md#the-merge))",
    metadata: "`changeset_id`, `source_head` (the ref HEAD names, or `detached`)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["TARGET_CHECKED_OUT_DIRTY"],
    when: "MERGED: the target branch is checked out in a work tree of the repository (its own, or a linked worktree) that has uncommitted changes, or an untracked file where the merge would write one, or that git could not update (busy): nothing changed. Commit or stash there, or name another `target_ref` ([landing-work.md](landing-work.md#the-checked-out-branch))",
    metadata: "`changeset_id`, `target_ref`, `worktree` (relative to the repository's `source_path`; `.` for its own work tree)",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["SESSION_STRANDED"],
    when: "the session was stranded; resume it",
    metadata: "`session_id`, `workspace_id`, `changeset_id`, `stranded_at`, `reason`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["SESSION_ABANDONED"],
    when: "the session was abandoned",
    metadata: "`session_id`, `workspace_id`, `changeset_id`, `reason`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["SESSION_DESTROYED"],
    when: "the workspace was destroyed",
    metadata: "`session_id`, `workspace_id`, `reason`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["SESSION_RESUMED"],
    when: "this session id was resumed under another",
    metadata: "`session_id`, `new_session_id`, `workspace_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["ALREADY_RESUMED"],
    when: "a second resume of the same stranded session",
    metadata: "`new_session_id`",
  },
  {
    code: "ABORTED",
    reasons: ["HASH_MISMATCH"],
    when: "a write's or delete's `expected_hash` is not the file's hash in PostgreSQL (another writer, on any instance, got there first)",
    metadata: "`path`, `expected_hash`, `current_hash` (\"\" = no such file)",
  },
  {
    code: "ABORTED",
    reasons: ["CONCURRENT_WRITE", "OVERLAY_CHANGING"],
    when: "the file kept changing under a write or read (not expected: writes of a workspace take turns); for RebaseWorkspace, the workspace's overlay or base kept moving under three attempts; retry",
    metadata: "`path` (`session_id` for a rebase)",
  },
  {
    code: "PERMISSION_DENIED",
    reasons: ["AGENT_MISMATCH", "NOT_SESSION_OWNER", "NOT_CHANGESET_OWNER", "ROLE_REQUIRED"],
    when: "the caller acts for another agent, or lacks the admin role (GetPoolStats, SetRepositoryCheck, a `source_path`, `cause: ADMIN`, BeginTurn `require_environment_path`: checked before anything begins)",
    metadata: "varies",
  },
  {
    code: "PERMISSION_DENIED",
    reasons: ["INDEPENDENT_REVIEW_REQUIRED"],
    when: "TransitionChangeset to APPROVED or MERGED by one of the changeset's authors (an agent with a session on it) while its repository has `independent_review` (the default for new repositories): the decision must come from a reviewer or an admin not on it; auth on only ([security.md](security.md#separation-of-duties))",
    metadata: "`changeset_id`, `agent_id`, `to_state`, `rule` (`independent_review`)",
  },
  {
    code: "PERMISSION_DENIED",
    reasons: ["REPOSITORY_NOT_GRANTED"],
    when: "the caller's token does not grant the repository (an unknown repository id is answered the same way, except with `\"*\"`); see [security.md](security.md)",
    metadata: "`repo_id` (or `name`), `agent_id`",
  },
  {
    code: "PERMISSION_DENIED",
    reasons: ["CHANGESET_NOT_JOINABLE"],
    when: "CreateWorkspace `changeset_id` names a changeset the caller's agent has no session on (or none at all), and the caller is no admin",
    metadata: "`changeset_id`, `agent_id`",
  },
  {
    code: "RESOURCE_EXHAUSTED",
    reasons: ["FILE_TOO_LARGE"],
    when: "a file is over `BERTH_MAX_FILE_BYTES`: WriteFile's content, or ReadFile of a base file (refused before it is read)",
    metadata: "`path`, `size_bytes`, `limit_bytes`",
  },
  {
    code: "RESOURCE_EXHAUSTED",
    reasons: ["OVERLAY_QUOTA_EXCEEDED"],
    when: "the write or delete would take the workspace's overlay over `BERTH_MAX_OVERLAY_FILES` rows or `BERTH_MAX_OVERLAY_BYTES` bytes; nothing changed. Also what a turn's capture reports for a path that does not fit. A `google.rpc.QuotaFailure` (subject `workspace:<id>`); no `RetryInfo`: delete or shrink files ([security.md#tokens-jwt](security.md#overlay-size-per-workspace))",
    metadata: "`workspace_id`, `session_id`, `path`, `quota`, `limit`, `used`, `requested`, `overlay_files`, `overlay_bytes`",
  },
  {
    code: "RESOURCE_EXHAUSTED",
    reasons: ["TOO_MANY_CALLS", "TOO_MANY_STREAMS"],
    when: "the agent already has `BERTH_MAX_CALLS_PER_AGENT` calls in flight (or `BERTH_MAX_STREAMS_PER_AGENT` streams open) on this instance; the handler did not run. A `google.rpc.QuotaFailure` (subject `agent:<id>`) and a `google.rpc.RetryInfo` (200 ms; 5 s for a stream) ([security.md#tokens-jwt](security.md#concurrent-calls-per-agent))",
    metadata: "`agent_id`, `quota`, `limit`, `in_flight`",
  },
  {
    code: "UNAUTHENTICATED",
    reasons: ["TOKEN_MISSING", "TOKEN_INVALID", "TOKEN_EXPIRED", "TOKEN_NOT_YET_VALID"],
    when: "auth is on and the bearer token is absent, unknown, malformed, expired or not valid yet (`nbf`); for a JWT, `TOKEN_INVALID` names what is wrong: no `exp`, a lifetime over `BERTH_JWT_MAX_LIFETIME_S`, `iat` in the future, wrong `iss`/`aud`, no `sub` (`claim`), an algorithm not accepted (`alg`) ([security.md#tokens-jwt](security.md#tokens-jwt))",
    metadata: "JWT: `claim` or `alg`; `lifetime_s`, `max_lifetime_s`",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["SERVER_SHUTTING_DOWN", "SOURCE_UNREADABLE"],
    when: "the server is stopping (retry on another instance); the repository's source could not be read",
    metadata: "",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["GIT_FAILED"],
    when: "a git command of CommitChangeset or a merge failed in the repository (disk full, a corrupt object, a lock left by a crashed git), or a fetch or push to a git server failed for a reason Berth does not recognise",
    metadata: "`source_path` (admins' logs), `command`, `exit_code`",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["REMOTE_UNREACHABLE"],
    when: "a call that needs the git server of a repository registered with a `remote_url` (RegisterRepository, CreateWorkspace or RebaseWorkspace naming a branch or a commit this instance's mirror lacks, CommitChangeset, MERGED, a read of a base commit the mirror lacks) could not reach it (refused, unresolvable, timed out); nothing changed, retry. Work on commits the mirror has goes on without the server ([landing-work.md](landing-work.md#faults))",
    metadata: "`repo_id` (none at RegisterRepository), `operation` (`ls-remote`, `fetch`, `push`)",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["CAPTURE_PENDING"],
    when: "ResumeSession: the session was stranded under a running turn whose instance (alive) has not finished capturing it into the overlay within 10 s, or within the call's deadline less the time its resume needs (up to 1 s); nothing changed; retry",
    metadata: "`workspace_id`, `turn_id`, `owner_instance`",
  },
  {
    code: "INTERNAL",
    reasons: [],
    when: "a bug; the message is generic and the cause is in the server's log",
    metadata: "",
  },
  {
    code: "NOT_FOUND",
    reasons: ["SYMBOL_NOT_FOUND"],
    when: "ClaimSymbols names a symbol of a file Berth cannot split into symbols (no grammar, too large, binary): claim it whole, symbol `\"\"`; nothing is claimed. A symbol a parsable file does not define yet (or of a file not there yet) is granted as a reservation, `Claim.not_yet_defined` ([overlay.md](overlay.md#claims))",
    metadata: "`path`, `symbols` (JSON array of those named), `known` (`[]`)",
  },
  {
    code: "NOT_FOUND",
    reasons: ["TURN_NOT_FOUND"],
    when: "GetTurn, EndTurn, CancelTurn, TurnHeartbeat: no turn has this id",
    metadata: "`turn_id`",
  },
  {
    code: "NOT_FOUND",
    reasons: ["SERVICE_UNKNOWN"],
    when: "grpc.health.v1 Health/Check of a service this server does not serve",
    metadata: "`service`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["SYMBOL_LOCKED"],
    when: "a write, delete or ClaimSymbols touches a symbol another session has claimed (or a path it holds whole, symbol `\"\"`); nothing changed and `claim.conflict` is recorded ([overlay.md](overlay.md#claims))",
    metadata: "`path`, `symbol`, `holder_session_id`, `holder_agent_id`, `holder_agent_name`, `since`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["STALE_OVERLAY"],
    when: "a write of a path this session never read (or read before the change) that another session changed and whose changeset is under review or approved; read it again, then write ([overlay.md](overlay.md))",
    metadata: "`path`, `other_session_id`, `other_agent_name`, `other_changeset_id`, `other_changeset_state`, `changed_at`, `last_read_at`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["SESSION_NOT_STRANDED"],
    when: "ResumeSession of a session that is active (only a stranded session can be resumed) or otherwise not stranded",
    metadata: "`session_id`, `workspace_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["STATE_MISMATCH"],
    when: "TransitionChangeset with `expected_state`: the changeset is in another state (and not already in `to_state`); nothing changed",
    metadata: "`changeset_id`, `expected_state`, `actual_state`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["CAPTURE_INCOMPLETE"],
    when: "EndTurn: some path of the environment could not be captured into the overlay; the turn stays RUNNING and its directory is kept: resolve, then EndTurn again ([turns.md](turns.md))",
    metadata: "`turn_id`, `paths` (comma-separated), `reason`, `captured`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["TURN_NOT_RUNNING"],
    when: "EndTurn or TurnHeartbeat of a turn that has ended",
    metadata: "`turn_id`, `state`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["TURN_NOT_ON_THIS_SERVER"],
    when: "a turn call reached an instance that does not hold the turn and could not forward it (an internal call between instances)",
    metadata: "`turn_id`",
  },
  {
    code: "FAILED_PRECONDITION",
    reasons: ["INSTANCE_NAME_IN_USE", "ENV_ROOT_IN_REPOSITORY"],
    when: "at start, not over RPC (exit 1): another running instance has this `BERTH_INSTANCE_NAME`; `BERTH_ENV_ROOT` lies inside a git work tree ([operations.md](operations.md))",
    metadata: "`instance_name`; `env_root`, `repository`",
  },
  {
    code: "ABORTED",
    reasons: ["TURN_SUPERSEDED", "TURN_CANCELLED"],
    when: "BeginTurn: the turn was superseded by a newer BeginTurn (a steer) or cancelled before it started",
    metadata: "`turn_id`",
  },
  {
    code: "ABORTED",
    reasons: ["TURN_RACE_LOST"],
    when: "BeginTurn: another instance started a turn for this session first; retry (it may then be forwarded to that instance)",
    metadata: "`turn_id`, `owner_instance`",
  },
  {
    code: "OUT_OF_RANGE",
    reasons: ["EVENTS_PRUNED"],
    when: "WatchEvents `after_seq` is older than the retained events; resume from 0 or from `oldest_seq - 1` ([events.md](events.md))",
    metadata: "`after_seq`, `oldest_seq`, `pruned_through`",
  },
  {
    code: "RESOURCE_EXHAUSTED",
    reasons: ["SUBSCRIBER_TOO_SLOW"],
    when: "a WatchEvents subscriber fell too far behind the live stream; the stream ends, resume with `after_seq = last_seq` ([events.md](events.md))",
    metadata: "`last_seq`",
  },
  {
    code: "CANCELLED",
    reasons: ["CANCELLED"],
    when: "the client cancelled the call; a WriteFile or DeleteFile cancelled while waiting for its workspace stores nothing",
    metadata: "`path` (writes)",
  },
  {
    code: "DEADLINE_EXCEEDED",
    reasons: ["DEADLINE_EXCEEDED"],
    when: "the call's deadline passed; a WriteFile or DeleteFile past it stores nothing",
    metadata: "",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["SERVER_STARTING", "SERVER_STOPPING"],
    when: "the server is still starting (ports bound, start-up reconcile running): retry shortly; a WatchEvents stream ends because the server stops: resume elsewhere with `after_seq = last_seq`",
    metadata: "`last_seq` (streams)",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["EVENTS_UNAVAILABLE"],
    when: "WatchEvents or WatchTurns on a server whose event delivery is not running",
    metadata: "",
  },
  {
    code: "UNAVAILABLE",
    reasons: ["TURN_OWNER_MOVED", "TURN_OWNER_UNREACHABLE"],
    when: "a turn call for a session whose environment another instance holds: that instance changed, or cannot be reached; retry (a dead owner's turn is failed `owner_lost` and the retry is served)",
    metadata: "`owner_instance`, `address`",
  },
  {
    code: "UNIMPLEMENTED",
    reasons: ["UNIMPLEMENTED", "LANDING_UNAVAILABLE"],
    when: "this server was built without the overlay, or does not land changesets (an embedding without git)",
    metadata: "",
  },
] as const satisfies readonly ReasonRow[];

/** A reason of the list above. */
export type Reason = (typeof REASON_ROWS)[number]["reasons"][number];
