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

const ALWAYS = new Set([
  "berth.v1.WorkspaceService.ListRepositories",
  "berth.v1.WorkspaceService.GetWorkspace",
  "berth.v1.WorkspaceService.ListSessions",
  "berth.v1.WorkspaceService.CountActive",
  "berth.v1.WorkspaceService.Heartbeat",
  "berth.v1.WorkspaceService.StrandSession",
  "berth.v1.WorkspaceService.AbandonSession",
  "berth.v1.WorkspaceService.ReadFile",
  "berth.v1.WorkspaceService.ListFiles",
  "berth.v1.WorkspaceService.ClaimSymbols",
  "berth.v1.WorkspaceService.ReleaseSymbols",
  "berth.v1.WorkspaceService.DescribeOtherModifiers",
  "berth.v1.WorkspaceService.CommitChangeset",
  "berth.v1.WorkspaceService.DiffWorkspace",
  "berth.v1.WorkspaceService.DiffChangeset",
  "berth.v1.WorkspaceService.ResolveIdPrefix",
  "berth.v1.WorkspaceService.ListChangesets",
  "berth.v1.WorkspaceService.GetChangeset",
  "berth.v1.TurnService.CancelTurn",
  "berth.v1.TurnService.TurnHeartbeat",
  "berth.v1.TurnService.ListTurns",
  "berth.v1.TurnService.GetPoolStats",
  "berth.v1.TurnService.GetWorkspaceMap",
]);

/** Whether this request may be sent again when its first attempt's outcome is unknown. */
export function isIdempotent(method: DescMethod, message: unknown): boolean {
  const name = `${method.parent.typeName}.${method.name}`;
  if (ALWAYS.has(name)) return true;
  if (name === "berth.v1.TurnService.BeginTurn") return ((message as { clientTurnId?: string }).clientTurnId ?? "") !== "";
  return false;
}
