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
export function isIdempotent(method, message) {
    const name = `${method.parent.typeName}.${method.name}`;
    if (ALWAYS.has(name))
        return true;
    if (name === "berth.v1.TurnService.BeginTurn")
        return (message.clientTurnId ?? "") !== "";
    return false;
}
