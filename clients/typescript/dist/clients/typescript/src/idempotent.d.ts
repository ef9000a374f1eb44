/**
 * Which calls a client may send again after a failure that left their outcome unknown (the
 * connection dropped, the server was stopping). A call is listed only when a second copy leaves
 * the same state and answers like the first, from the protos' and docs' own words:
 *
 * - reads: ListRepositories, GetWorkspace, ListSessions, CountActive, ReadFile, ListFiles,
 *   DescribeOtherModifiers, DiffWorkspace, DiffChangeset, ResolveIdPrefix, ListChangesets,
 *   GetChangeset, ListTurns,
 *   GetPoolStats, GetWorkspaceMap, TurnHeartbeat;
 * - Heartbeat (extends the lease again), StrandSession and AbandonSession ("Idempotent" in the
 *   proto), ClaimSymbols (a session re-claiming what it holds keeps it), ReleaseSymbols (releasing
 *   again releases nothing more), CancelTurn (a second cancel answers cancelled=false, same
 *   state), CommitChangeset (the same overlay gives the same commit, unchanged=true);
 * - BeginTurn only with a client_turn_id ("a retried BeginTurn with the same id returns the
 *   same turn"); without one a retry would supersede the first turn.
 *
 * Not retried: RegisterRepository and CreateWorkspace (a retry answers ALREADY_EXISTS),
 * DestroyWorkspace, ResumeSession (ALREADY_RESUMED), TransitionChangeset (INVALID_TRANSITION
 * after a first success), WriteFile and DeleteFile (a retry with expected_hash fails, one without
 * it may overwrite another writer), EndTurn, RebaseWorkspace. Streams are resumed, not retried
 * (events(), hold()).
 */
import type { DescMethod } from "@bufbuild/protobuf";
/** Whether this request may be sent again when its first attempt's outcome is unknown. */
export declare function isIdempotent(method: DescMethod, message: unknown): boolean;
