import { AbandonCause, AbandonSessionResponseSchema, ChangesetState, GetWorkspaceResponseSchema, LifecycleState, ListSessionsResponseSchema, ResumeSessionResponseSchema, StrandSessionResponseSchema, WorkspaceMode } from "@berth/client";
import { create } from "@bufbuild/protobuf";
import { allPages, cliFor, resolveRepoIds } from "./client.js";
import { enumName, formatTime, jsonLine, keyValues, paint, print, table } from "./output.js";
import { idArgument } from "./ids.js";
const LIFECYCLE_COLOUR = { ACTIVE: "green", STRANDED: "yellow", ABANDONED: "red", DESTROYED: "grey" };
export function lifecycleName(state) {
    const name = enumName(LifecycleState, state, "");
    return paint(LIFECYCLE_COLOUR[name], name);
}
export function changesetName(state) {
    return enumName(ChangesetState, state, "");
}
export function workspaceBlock(ws) {
    return keyValues([
        ["session", ws.sessionId],
        ["workspace", ws.workspaceId],
        ["repository", ws.repoId],
        ["agent", `${ws.agentName} (${ws.agentId})`],
        ["lifecycle", lifecycleName(ws.lifecycleState)],
        ["lifecycle reason", ws.lifecycleReason],
        ["changeset", `${ws.changesetId} ${changesetName(ws.changesetState)}`],
        ["intent", ws.intent],
        ["base commit", ws.baseCommit],
        ["mode", enumName(WorkspaceMode, ws.mode, "")],
        ["created", formatTime(ws.createdAt)],
        ["last active", formatTime(ws.lastActiveAt)],
        ["expires", formatTime(ws.expiresAt)],
        ["stranded", formatTime(ws.strandedAt)],
        ["resumed from", ws.resumedFromSessionId],
    ]);
}
export function registerSessions(program) {
    const sessions = program.command("sessions").description("agent sessions and their lifecycle");
    sessions
        .command("ls")
        .description("list the live sessions of a repository (ListSessions)")
        .requiredOption("--repo <id>", "the repository (id or name)")
        .action(async (opts, command) => {
        const cli = cliFor(command);
        const [repoId] = await resolveRepoIds(cli, [opts.repo]);
        const sessions = await allPages((pageToken) => cli.call("listing sessions", () => cli.workspaces.listSessions({ repoId: repoId, pageToken })).then((r) => ({ items: r.sessions, nextPageToken: r.nextPageToken })));
        const res = create(ListSessionsResponseSchema, { sessions });
        if (cli.json)
            return print(jsonLine(ListSessionsResponseSchema, res));
        if (res.sessions.length === 0)
            return print("no live sessions");
        print(table(["SESSION", "AGENT", "STATE", "CHANGESET", "MODE", "LAST ACTIVE", "INTENT"], res.sessions.map((s) => [
            s.sessionId,
            s.agentName,
            lifecycleName(s.lifecycleState),
            changesetName(s.changesetState),
            enumName(WorkspaceMode, s.mode, "WORKSPACE_MODE_"),
            formatTime(s.lastActiveAt),
            s.intent,
        ])));
    });
    addShowCommand(sessions);
    sessions
        .command("strand")
        .description("strand a session, keeping its work for a later resume (StrandSession)")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .option("--reason <text>", "why")
        .action(async (sessionId, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("stranding", () => cli.workspaces.strandSession({ sessionId, reason: opts.reason ?? "" }));
        if (cli.json)
            return print(jsonLine(StrandSessionResponseSchema, res));
        print(workspaceBlock(res.workspace));
    });
    sessions
        .command("resume")
        .description("resume a stranded session under a new session id (ResumeSession)")
        .addArgument(idArgument("session", "<dead-session>", "the stranded session id"))
        .option("--agent <id>", "the agent resuming (default: the agent that owned the session)")
        .option("-q, --quiet", "print only the new session's id (S=$(berth sessions resume … -q))")
        .action(async (deadSessionId, opts, command) => {
        const cli = cliFor(command);
        let agentId = opts.agent;
        if (agentId === undefined) {
            const { workspace } = await cli.call("reading the workspace", () => cli.workspaces.getWorkspace({ sessionId: deadSessionId }));
            agentId = workspace.agentId;
        }
        const res = await cli.call("resuming", () => cli.workspaces.resumeSession({ deadSessionId, agentId }));
        if (opts.quiet)
            return print(res.newSessionId);
        if (cli.json)
            return print(jsonLine(ResumeSessionResponseSchema, res));
        print(keyValues([["new session", paint("green", res.newSessionId)]]));
        print(workspaceBlock(res.workspace));
    });
    sessions
        .command("abandon")
        .description("abandon a session: its changeset is rejected and its overlay deleted (AbandonSession)")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .option("--reason <text>", "why")
        .option("--admin", "abandon as an operator (admin role when auth is on)")
        .action(async (sessionId, opts, command) => {
        const cli = cliFor(command);
        const cause = opts.admin ? AbandonCause.ADMIN : AbandonCause.EXPLICIT;
        const res = await cli.call("abandoning", () => cli.workspaces.abandonSession({ sessionId, reason: opts.reason ?? "", cause }));
        if (cli.json)
            return print(jsonLine(AbandonSessionResponseSchema, res));
        print(workspaceBlock(res.workspace));
    });
}
/** `show <session>` (GetWorkspace), under `workspace` and, as before, under `sessions`. */
export function addShowCommand(parent) {
    parent
        .command("show")
        .description("show a session's workspace (GetWorkspace); stranded and abandoned sessions too")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .action(async (sessionId, _opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("reading the workspace", () => cli.workspaces.getWorkspace({ sessionId }));
        if (cli.json)
            return print(jsonLine(GetWorkspaceResponseSchema, res));
        print(workspaceBlock(res.workspace));
    });
}
