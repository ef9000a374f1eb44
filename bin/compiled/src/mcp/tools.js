/**
 * Berth's MCP tools, written once against the generated WorkspaceService client: every tool is
 * one or a few RPCs, so listing and calling them goes through the server's own pipeline and
 * handlers (authentication, validation, claims, STALE_OVERLAY, logging, metrics, tracing) and no
 * rule is copied here. `berth mcp` (stdio) gives a network client; the server's /mcp route gives
 * one whose transport dispatches into its own pipeline (transport/mcp-route.ts).
 *
 * A tool acts on one session: its `session_id` argument, else the session the server was
 * started with (`berth mcp --session`, `/mcp?session=`), else the one create_session or
 * resume_session last bound on this connection. A stranded session is never continued silently:
 * its refusal (SESSION_STRANDED) tells the agent to call resume_session.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import * as z from "zod";
import { ChangesetState, FileChange, FileSource, LifecycleState, SymbolChangeKind, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { answered, localRefusal } from "./refusals.js";
/**
 * The version MCP clients see in serverInfo: that of this tool set (names, arguments, results),
 * raised when a tool changes, whichever server release serves it.
 */
export const TOOLS_VERSION = "1.1.0";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const sessionArg = z.string().optional().describe("The session (UUID). Default: the session this MCP server is bound to (its start, or the last create_session / resume_session).");
const pathArg = z.string().describe("Repository-relative path, e.g. src/app.ts (no leading /, no ..).");
const symbolRef = z.object({
    path: pathArg,
    symbol: z.string().describe('Qualified symbol name, e.g. "TaskService.create_task"; empty string for the file as a whole.'),
});
/** Enum value → its proto name without the prefix, lower case ("FILE_CHANGE_ADDED" → "added"). */
function named(enumObject, value) {
    return (enumObject[value] ?? "unspecified").toLowerCase();
}
function text(value) {
    return { content: [{ type: "text", text: JSON.stringify(value, null, 2) }] };
}
function workspaceView(ws) {
    if (ws === undefined)
        return {};
    return {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        repo_id: ws.repoId,
        agent_id: ws.agentId,
        agent_name: ws.agentName,
        changeset_id: ws.changesetId,
        changeset_state: named(ChangesetState, ws.changesetState),
        lifecycle_state: named(LifecycleState, ws.lifecycleState),
        intent: ws.intent,
        base_commit: ws.baseCommit,
    };
}
const utf8 = new TextDecoder("utf-8", { fatal: true });
/** A file's bytes as text when they are UTF-8, else base64 (said so). */
function contentView(bytes) {
    try {
        return { content: utf8.decode(bytes), encoding: "utf-8" };
    }
    catch {
        return { content: Buffer.from(bytes).toString("base64"), encoding: "base64" };
    }
}
/** A review comment as the tools show it (snake_case, like every tool's answer). */
export function commentView(c) {
    return {
        id: c.id,
        ...(c.path ? { path: c.path } : {}),
        ...(c.line ? { line: c.line } : {}),
        body: c.body,
        author: c.author,
        ...(c.createdAt ? { created_at: timestampDate(c.createdAt).toISOString() } : {}),
        resolved: c.resolved,
        ...(c.resolved ? { resolved_by: c.resolvedBy } : {}),
    };
}
/** The comments an agent is shown at most at once: a changeset with more has a review problem no page fixes. */
export const MAX_LISTED_COMMENTS = 1000;
/** A changeset's comments (open ones, or all), oldest first, every page up to MAX_LISTED_COMMENTS; `more` when there were more. */
export async function changesetComments(client, call, changesetId, includeResolved) {
    const comments = [];
    let pageToken = "";
    do {
        const page = await client.listComments({ changesetId, includeResolved, pageToken, pageSize: 500 }, call);
        comments.push(...page.comments);
        pageToken = page.nextPageToken;
    } while (pageToken !== "" && comments.length < MAX_LISTED_COMMENTS);
    return { comments: comments.slice(0, MAX_LISTED_COMMENTS), more: pageToken !== "" || comments.length > MAX_LISTED_COMMENTS };
}
/** A new MCP server exposing Berth's tools over `options.client`. */
export function createBerthMcpServer(options) {
    const { client } = options;
    const call = options.callOptions ?? {};
    const bound = { session: options.session };
    const server = new McpServer({ name: "berth", version: TOOLS_VERSION }, {
        instructions: "Berth keeps your work as an overlay of file changes on a base commit, tied to a changeset. Start with create_session (or resume_session), " +
            "then read_file / write_file / delete_file / list_files; claim_symbols before editing code other agents may touch; diff_workspace to review; submit when done. " +
            "Reviewers comment on your changeset: list_comments shows the open ones; act on each, then resolve_comment. " +
            "A refused call is a tool error naming the reason (SYMBOL_LOCKED, STALE_OVERLAY, SESSION_STRANDED, …) and what to do next.",
    });
    /** Runs `work` on the call's session, or refuses when none is known. */
    const onSession = (sessionId, work) => {
        const id = sessionId ?? bound.session;
        if (id === undefined) {
            return Promise.resolve(localRefusal("FAILED_PRECONDITION", "NO_SESSION", "no session: pass session_id, or call create_session or resume_session first"));
        }
        return answered(() => work(id));
    };
    const workspaceOf = async (sessionId) => (await client.getWorkspace({ sessionId }, call)).workspace;
    server.registerTool("create_session", {
        title: "Create a session",
        description: "Opens a new session (a workspace: an overlay of changes on a base commit, with a DRAFT changeset) in a repository, and binds this MCP server to it. " +
            "Returns the session id, changeset id and agent name.",
        inputSchema: {
            repo: z.string().describe("The repository: its id (UUID) or its registered name."),
            intent: z.string().optional().describe("What you set out to do (becomes the default commit message)."),
            base_commit: z.string().optional().describe("Commit or ref the overlay applies to. Default: main."),
            changeset_id: z.string().optional().describe("Join an existing changeset (UUID) instead of starting a new one."),
        },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }, (args) => answered(async () => {
        const repoId = UUID.test(args.repo) ? args.repo : await repositoryId(client, call, args.repo);
        if (repoId === undefined)
            return localRefusal("NOT_FOUND", "REPOSITORY_NOT_FOUND", `no repository named "${args.repo}" that you may see`, { name: args.repo });
        const { workspace } = await client.createWorkspace({ repoId, intent: args.intent ?? "", baseCommit: args.base_commit ?? "main", mode: WorkspaceMode.PERSISTENT, changesetId: args.changeset_id ?? "" }, call);
        bound.session = workspace.sessionId;
        return text(workspaceView(workspace));
    }));
    server.registerTool("resume_session", {
        title: "Resume a stranded session",
        description: "Brings a stranded session back (ResumeSession) under a new session id, its overlay and changeset intact, and binds this MCP server to it; " +
            "its claims were released when it was stranded, so claim again what you need. " +
            "Use it when a tool answers SESSION_STRANDED. Only the agent that owned the session may resume it.",
        inputSchema: { session_id: z.string().optional().describe("The stranded session (UUID). Default: the bound session.") },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }, (args) => onSession(args.session_id, async (deadSessionId) => {
        // The owner's identity as the server recorded it; the server decides whether the caller is that owner.
        const dead = await workspaceOf(deadSessionId);
        const res = await client.resumeSession({ deadSessionId, agentId: dead.agentId }, call);
        bound.session = res.newSessionId;
        return text({ resumed_from: deadSessionId, ...workspaceView(res.workspace) });
    }));
    server.registerTool("get_session", {
        title: "Describe the session",
        description: "The bound (or given) session: ids, agent name, changeset state, lifecycle state (active or stranded), intent and base commit.",
        inputSchema: { session_id: sessionArg },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => text(workspaceView(await workspaceOf(sessionId)))));
    server.registerTool("read_file", {
        title: "Read a file",
        description: "Reads a file of the workspace: your overlay's version if you changed it, else the base commit's. Returns content (UTF-8 text, or base64 when binary), " +
            "its sha256 hash (pass it as expected_hash to write_file to write only over what you read) and source (overlay or base).",
        inputSchema: { path: pathArg, session_id: sessionArg },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.readFile({ sessionId, path: args.path }, call);
        return text({ path: args.path, hash: res.hash, source: named(FileSource, res.source), ...contentView(res.content) });
    }));
    server.registerTool("write_file", {
        title: "Write a file",
        description: "Writes a file into the workspace's overlay (the base is never touched). With expected_hash, writes only if the current content has that sha256 " +
            '(from read_file); expected_hash "" writes only a new file. Symbols the write changes are claimed for you; a symbol another agent claimed is refused (SYMBOL_LOCKED). ' +
            "Returns the new hash, added or modified, the symbols changed and other sessions that touched the file.",
        inputSchema: {
            path: pathArg,
            content: z.string().describe("The whole new content, UTF-8 text (or base64 with encoding: base64)."),
            encoding: z.enum(["utf-8", "base64"]).optional().describe("How content is encoded. Default utf-8."),
            expected_hash: z.string().optional().describe('Write only if the current content has this sha256 (hex); "" only if the file does not exist.'),
            symbols: z.array(z.string()).optional().describe("Symbols you change besides those Berth finds in the content."),
            session_id: sessionArg,
        },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const content = args.encoding === "base64" ? Buffer.from(args.content, "base64") : new TextEncoder().encode(args.content);
        const res = await client.writeFile({ sessionId, path: args.path, content, declaredSymbols: args.symbols ?? [], ...(args.expected_hash !== undefined ? { expectedHash: args.expected_hash } : {}) }, call);
        return text({
            path: args.path,
            hash: res.newHash,
            change: named(FileChange, res.change),
            symbols: res.symbols.map((s) => ({ name: s.name, kind: s.kind, change: named(SymbolChangeKind, s.change) })),
            also_touched_by: res.conflicts.map((c) => ({ agent_name: c.agentName, session_id: c.sessionId, symbols: c.symbols })),
        });
    }));
    server.registerTool("delete_file", {
        title: "Delete a file",
        description: "Deletes a file in the workspace's overlay (the base keeps it until the changeset lands). With expected_hash, only if the current content has that sha256.",
        inputSchema: { path: pathArg, expected_hash: z.string().optional().describe("Delete only if the current content has this sha256 (hex)."), session_id: sessionArg },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.deleteFile({ sessionId, path: args.path, ...(args.expected_hash !== undefined ? { expectedHash: args.expected_hash } : {}) }, call);
        return text({
            path: args.path,
            deleted: true,
            symbols: res.symbols.map((s) => s.name),
            also_touched_by: res.conflicts.map((c) => ({ agent_name: c.agentName, session_id: c.sessionId, symbols: c.symbols })),
        });
    }));
    server.registerTool("list_files", {
        title: "List files",
        description: "Lists the workspace's files (the base with your overlay applied), in path order, one page at a time: each with its source (base or overlay), " +
            "its change (added, modified) and whether another live session changed it too; paths you deleted only with include_deleted. " +
            "Pass next_page_token back as page_token for more.",
        inputSchema: {
            prefix: z.string().optional().describe("Only paths starting with this, e.g. src/."),
            include_deleted: z.boolean().optional().describe("Also list the base paths you deleted (change deleted)."),
            page_token: z.string().optional().describe("next_page_token of the previous page."),
            session_id: sessionArg,
        },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.listFiles({ sessionId, prefix: args.prefix ?? "", pageToken: args.page_token ?? "", includeDeleted: args.include_deleted ?? false }, call);
        return text({
            files: res.entries.map((e) => ({
                path: e.path,
                source: named(FileSource, e.source),
                ...(e.source === FileSource.OVERLAY ? { change: e.deleted ? "deleted" : named(FileChange, e.change) } : {}),
                ...(e.modifiedByOther ? { modified_by_other: true } : {}),
            })),
            next_page_token: res.nextPageToken,
        });
    }));
    server.registerTool("claim_symbols", {
        title: "Claim symbols",
        description: "Claims symbols (functions, classes, …) or whole files before you edit them, all or nothing: while you hold a claim no other agent can change it. " +
            "Refused with SYMBOL_LOCKED naming the agent that holds one of them. Claims end when you release them, submit, or your session ends. " +
            "A symbol the file does not define yet (or of a file that does not exist yet) is granted as a reservation, marked not_yet_defined: " +
            "claim what you are about to add; if you meant an existing symbol, the mark shows a typo.",
        inputSchema: { symbols: z.array(symbolRef).min(1).describe("What to claim."), session_id: sessionArg },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.claimSymbols({ sessionId, symbols: args.symbols }, call);
        return text({ claims: res.claims.map((c) => ({ path: c.path, symbol: c.symbol, ...(c.notYetDefined ? { not_yet_defined: true } : {}) })) });
    }));
    server.registerTool("release_symbols", {
        title: "Release claims",
        description: "Releases claims this session holds; with no symbols, every claim of the session. Returns how many were released.",
        inputSchema: { symbols: z.array(symbolRef).optional().describe("What to release; omit to release everything."), session_id: sessionArg },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.releaseSymbols({ sessionId, symbols: args.symbols ?? [] }, call);
        return text({ released: res.released });
    }));
    server.registerTool("list_claims", {
        title: "List claims",
        description: "The claims in the session's repository: path, symbol, and the agent and session holding each.",
        inputSchema: { page_token: z.string().optional().describe("next_page_token of the previous page."), session_id: sessionArg },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.listClaims({ sessionId, pageToken: args.page_token ?? "" }, call);
        return text({
            claims: res.claims.map((c) => ({
                path: c.path,
                symbol: c.symbol,
                agent_name: c.agentName,
                agent_id: c.agentId,
                session_id: c.sessionId,
                ...(c.notYetDefined ? { not_yet_defined: true } : {}),
            })),
            next_page_token: res.nextPageToken,
        });
    }));
    server.registerTool("describe_other_modifiers", {
        title: "Who else touched a path",
        description: 'Which other sessions changed a path, and which of its symbols: e.g. "create_task modified by agent-2". Ask before editing a file others work on. ' +
            "Returns a sentence and the same as a list (agent, session, symbols, their changeset's state).",
        inputSchema: { path: pathArg, session_id: sessionArg },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const ws = await workspaceOf(sessionId);
        const res = await client.describeOtherModifiers({ repoId: ws.repoId, path: args.path, excludeSessionId: sessionId }, call);
        return text({
            text: res.text === "" ? "nobody else touched it" : res.text,
            modifiers: res.modifiers.map((m) => ({ agent_name: m.agentName, agent_id: m.agentId, session_id: m.sessionId, symbols: m.symbols, changeset_state: named(ChangesetState, m.changesetState) })),
        });
    }));
    server.registerTool("diff_workspace", {
        title: "Diff the workspace",
        description: "The workspace's changes against its base commit as a unified diff (git's format; `git apply` takes it), and per path: change, lines added and removed, symbols.",
        inputSchema: { session_id: sessionArg },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const res = await client.diffWorkspace({ sessionId }, call);
        return text({
            base_commit: res.baseCommit,
            paths: res.paths.map((p) => ({ path: p.path, change: named(FileChange, p.change), ...(p.oldPath ? { old_path: p.oldPath } : {}), added: p.linesAdded, removed: p.linesRemoved, ...(p.binary ? { binary: true } : {}), symbols: p.symbols })),
            patch: new TextDecoder().decode(res.patch),
        });
    }));
    server.registerTool("submit", {
        title: "Submit the changeset",
        description: "Hands the session's changeset in for review: DRAFT → SUBMITTED. Do it when the work is done (check diff_workspace first). " +
            "A changeset already submitted is answered as it is (unchanged: true).",
        inputSchema: { reason: z.string().optional().describe("A short note for the reviewer."), session_id: sessionArg },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const ws = await workspaceOf(sessionId);
        // Compare-and-set from DRAFT: a retry after success is `unchanged`, and a changeset moved on meanwhile is refused, not moved back.
        const res = await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.SUBMITTED, expectedState: ChangesetState.DRAFT, reason: args.reason ?? "" }, call);
        return text({ changeset_id: res.changeset?.id, state: named(ChangesetState, res.changeset?.state ?? 0), unchanged: res.unchanged });
    }));
    server.registerTool("list_comments", {
        title: "List review comments",
        description: "The open review comments on the session's changeset, oldest first: each with its id, path and line (in the new file; none: the whole file or the changeset), " +
            "body and author. Act on each, then resolve_comment it. include_resolved also lists those already resolved.",
        inputSchema: { include_resolved: z.boolean().optional().describe("Also the resolved comments. Default false."), session_id: sessionArg },
        annotations: { readOnlyHint: true },
    }, (args) => onSession(args.session_id, async (sessionId) => {
        const ws = await workspaceOf(sessionId);
        const { comments, more } = await changesetComments(client, call, ws.changesetId, args.include_resolved ?? false);
        return text({ changeset_id: ws.changesetId, comments: comments.map(commentView), ...(more ? { more: true } : {}) });
    }));
    server.registerTool("resolve_comment", {
        title: "Resolve a review comment",
        description: "Marks a review comment resolved once you acted on it (or it needs nothing). A comment already resolved is answered as it is.",
        inputSchema: { comment_id: z.string().describe("The comment (UUID), from list_comments.") },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    }, (args) => answered(async () => {
        const res = await client.resolveComment({ commentId: args.comment_id }, call);
        return text(commentView(res.comment));
    }));
    return server;
}
/** A repository's id by name (ListRepositories, every page), or undefined. */
async function repositoryId(client, call, name) {
    let pageToken = "";
    do {
        const page = await client.listRepositories({ pageToken }, call);
        const found = page.repositories.find((r) => r.name === name);
        if (found)
            return found.id;
        pageToken = page.nextPageToken;
    } while (pageToken !== "");
    return undefined;
}
