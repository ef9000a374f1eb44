/**
 * berth.v1.WorkspaceService: translates between the wire and the registry, nothing else.
 * Each method validates its request (INVALID_ARGUMENT naming the fields), checks the caller,
 * calls the domain and maps the result back.
 */
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { type WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import {
  actsForAnyone,
  auditAdminAction,
  effectiveAgentId,
  requireChangesetMember,
  requireRepository,
  requireRepositoryName,
  requireRole,
  seesRepository,
  showsServerPaths,
} from "./authorize.js";
import { commentHandlers } from "./comment-handlers.js";
import { diffHandlers } from "./diff-handlers.js";
import { changesetHandlers } from "./changeset-handlers.js";
import { ChangesetFacts, independentReviewGuard, moverOf, requireChangesetMover } from "./changeset-access.js";
import { verificationHandlers } from "./verification-handlers.js";
import { eventHandlers } from "./event-handlers.js";
import { lifecycleHandlers } from "./lifecycle-handlers.js";
import { overlayHandlers } from "./overlay-handlers.js";
import { claimListHandler } from "./claim-list-handler.js";
import { idPrefixHandler } from "./id-prefix-handler.js";
import { changesetStateName, modeName } from "../platform/proto-enums.js";
import type { CallContext, ServiceHandlers } from "./handler.js";
import { isSessionActivity, ownedSession } from "./session-access.js";
import { getWorkspaceResponse } from "./workspace-encoding.js";
import { AGENT_ID, AGENT_NAME, Check, LIMITS, REQUEST_ID } from "./validate.js";
import { pageOf, readPage, type PageRule } from "./pagination.js";
import { sessionKey, type SessionKey } from "../sessions/registry.js";
import type { Repository } from "../sessions/workspace.js";
import type { LifecycleName } from "../platform/schema.js";
import { BerthError } from "../platform/errors.js";
import { redactUrl } from "../repository/remote-url.js";
import { usableIdentName } from "../overlay/fast-import.js";
import { changesetToWire, mergeToWire, repositoryToWire, sessionInfoToWire, workspaceToWire } from "./wire.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

const MAX_TTL_SECONDS = 30 * 86_400;
const REPOSITORIES_PAGE: PageRule = { list: "repositories", defaultSize: 100, maxSize: 1000 };
const SESSIONS_PAGE: PageRule = { list: "sessions", defaultSize: 100, maxSize: 1000 };
/** The states ListSessions can filter on; destroyed sessions are gone, not listed. */
const LISTED_STATES: Readonly<Partial<Record<LifecycleState, LifecycleName>>> = {
  [LifecycleState.ACTIVE]: "active",
  [LifecycleState.STRANDED]: "stranded",
  [LifecycleState.ABANDONED]: "abandoned",
};
/** git refuses the rest in a ref name; check-ref-format has the last word (src/overlay/landing.ts). */
const TARGET_REF = { max: LIMITS.targetRef, pattern: /^[A-Za-z0-9][A-Za-z0-9._/-]*$/, patternDescription: "a branch name or refs/heads/<name>" };
/** An author's name or e-mail: git's ident cannot hold <, > or a newline. */
const AUTHOR_PART = { max: LIMITS.commitAuthor, pattern: /^[^<>]*$/, patternDescription: "no < or >" };

/** The agent a commit is authored by when the request names nobody. */
function callerAgent(ctx: CallContext): string {
  return ctx.principal.agentId ?? "berth";
}

export function workspaceHandlers(deps: WorkspaceServiceDeps): ServiceHandlers<typeof WorkspaceService> {
  const { registry } = deps;
  /** The workspace of a session the caller owns, in any lifecycle state. */
  const ownedWorkspace = async (rawSessionId: string, ctx: CallContext) => {
    const c = new Check();
    const sessionId = c.uuid("session_id", rawSessionId);
    c.done();
    return ownedSession(registry, ctx, sessionId!, "any");
  };
  return {
    async registerRepository(req, ctx) {
      const c = new Check();
      const name = c.text("name", req.name, { max: LIMITS.repoName, required: true, pattern: /^[A-Za-z0-9][A-Za-z0-9._/-]*$/, patternDescription: "letters, digits and . _ / - (starting with a letter or digit)" });
      const sourcePath = c.text("source_path", req.sourcePath, { max: LIMITS.sourcePath });
      const remoteUrl = c.text("remote_url", req.remoteUrl, { max: LIMITS.remoteUrl });
      if (sourcePath && remoteUrl) c.add("remote_url", "MUTUALLY_EXCLUSIVE", "a repository has a source_path or a remote_url, not both");
      if (req.captureExclude.length > LIMITS.captureExcludePatterns) c.add("capture_exclude", "TOO_MANY", `at most ${LIMITS.captureExcludePatterns} patterns, got ${req.captureExclude.length}`);
      const exclude = req.captureExclude.map((p, i) => c.text(`capture_exclude[${i}]`, p, { max: LIMITS.captureExcludePattern, required: true }) ?? "");
      const requestId = c.text("request_id", req.requestId, REQUEST_ID) ?? "";
      c.done();
      requireRepositoryName(ctx.principal, name!);
      // A path on the server's disk, or a URL the server contacts (file:// is a path too): an admin's to name.
      if (sourcePath || remoteUrl) {
        requireRole(ctx.principal, "admin");
        auditAdminAction(ctx, { name: name!, ...(sourcePath ? { source_path: sourcePath } : { remote_url: redactUrl(remoteUrl!) }) });
      }
      const repo = await registry.registerRepository(name!, { sourcePath, remoteUrl }, exclude, requestId, req.independentReview ?? true);
      return { repository: repositoryToWire(repo, showsServerPaths(ctx.principal)) };
    },

    async updateRepository(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repository_id", req.repositoryId);
      c.done();
      // Who may approve and merge is a repository's policy: never an agent's to change.
      requireRole(ctx.principal, "admin");
      auditAdminAction(ctx, { repo_id: repoId!, ...(req.independentReview !== undefined ? { independent_review: String(req.independentReview) } : {}) });
      const repo = await registry.updateRepository(repoId!, { independentReview: req.independentReview });
      return { repository: repositoryToWire(repo, showsServerPaths(ctx.principal)) };
    },

    async listRepositories(req, ctx) {
      const c = new Check();
      const page = readPage(c, REPOSITORIES_PAGE, req.pageSize, req.pageToken, ["string"]);
      c.done();
      const p = ctx.principal;
      const visible: Repository[] = [];
      let after = page.after?.[0] as string | undefined;
      // A caller granted only some repositories gets full pages of those: read on until the page fills or the list ends.
      for (;;) {
        const batch = await registry.repositoriesAfter(after, page.size + 1);
        visible.push(...batch.filter((r) => seesRepository(p, r)));
        if (visible.length > page.size || batch.length <= page.size) break;
        after = batch[batch.length - 1]!.name;
      }
      const paths = showsServerPaths(p);
      const { items, nextPageToken } = pageOf(REPOSITORIES_PAGE, page, visible, (r) => [r.name]);
      return { repositories: items.map((r) => repositoryToWire(r, paths)), nextPageToken };
    },

    async createWorkspace(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repo_id", req.repoId);
      const intent = c.text("intent", req.intent, { max: LIMITS.intent, allowNewlines: true }) ?? "";
      const baseCommit = c.text("base_commit", req.baseCommit, { max: LIMITS.baseCommit, pattern: /^[A-Za-z0-9._/@^~{}-]+$/, patternDescription: "a commit id or ref" }) ?? "";
      const mode = c.enumValue("mode", req.mode, WorkspaceMode);
      if (req.ttlSeconds !== undefined) c.range("ttl_seconds", req.ttlSeconds, 1, MAX_TTL_SECONDS);
      const requestedAgent = c.text("agent_id", req.agentId, AGENT_ID) ?? "";
      const agentName = c.text("agent_name", req.agentName, AGENT_NAME);
      const sessionId = c.uuid("session_id", req.sessionId, false);
      const changesetId = c.uuid("changeset_id", req.changesetId, false);
      const requestId = c.text("request_id", req.requestId, REQUEST_ID) ?? "";
      c.done();
      const agentId = effectiveAgentId(ctx.principal, requestedAgent, "agent_id");
      if (sessionId) ctx.logFields.sessionId = sessionId;
      await requireRepository(registry, ctx.principal, repoId!);
      if (agentId !== ctx.principal.agentId) auditAdminAction(ctx, { agent_id: agentId, repo_id: repoId! });
      if (changesetId) await requireChangesetMember(ctx, changesetId, () => registry.agentsOfChangeset(changesetId), "CHANGESET_NOT_JOINABLE");
      const ws = await registry.createWorkspace({
        repoId: repoId!,
        intent,
        baseCommit,
        mode: modeName(mode!) ?? "persistent",
        ttlSeconds: req.ttlSeconds,
        agentId,
        agentName,
        sessionId,
        changesetId,
        requestId,
      });
      ctx.logFields.sessionId = ws.sessionId;
      return { workspace: workspaceToWire(ws) };
    },

    async getWorkspace(req, ctx) {
      // Any lifecycle state: a client reads a stranded workspace to decide whether to resume it.
      const ws = await ownedWorkspace(req.sessionId, ctx);
      if (ws.lifecycle === "active" && isSessionActivity(ctx, ws)) registry.touch(ws);
      return getWorkspaceResponse(ws);
    },

    async destroyWorkspace(req, ctx) {
      const ws = await ownedWorkspace(req.sessionId, ctx);
      return { workspace: workspaceToWire(await deps.lifecycle.destroy(ws.sessionId, "client")) };
    },

    async listSessions(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repo_id", req.repoId);
      const page = readPage(c, SESSIONS_PAGE, req.pageSize, req.pageToken, ["number", "string"]);
      const states: LifecycleName[] = [];
      req.states.forEach((s, i) => {
        const name = LISTED_STATES[s];
        if (name === undefined) c.add(`states[${i}]`, "UNKNOWN_ENUM_VALUE", `${LifecycleState[s] ? `LIFECYCLE_STATE_${LifecycleState[s]}` : s} cannot be listed; one of LIFECYCLE_STATE_ACTIVE, LIFECYCLE_STATE_STRANDED, LIFECYCLE_STATE_ABANDONED`);
        else if (!states.includes(name)) states.push(name);
      });
      c.done();
      await requireRepository(registry, ctx.principal, repoId!);
      const rows = await registry.listSessions(repoId!, states.length > 0 ? states : ["active", "stranded"], page.after as SessionKey | undefined, page.size + 1);
      const { items, nextPageToken } = pageOf(SESSIONS_PAGE, page, rows, sessionKey);
      return { sessions: items.map(sessionInfoToWire), nextPageToken };
    },

    async countActive(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repo_id", req.repoId, false);
      c.done();
      const p = ctx.principal;
      if (repoId !== undefined) await requireRepository(registry, p, repoId);
      // The total of a caller granted only some repositories counts those only.
      if (actsForAnyone(p) || p.repos.all) return registry.countActive(repoId);
      const within = (await registry.listRepositories()).filter((r) => seesRepository(p, r)).map((r) => r.id);
      return registry.countActive(repoId, within);
    },

    async transitionChangeset(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      const to = c.enumValue("to_state", req.toState, ChangesetState);
      const reason = c.text("reason", req.reason, { max: LIMITS.reason }) ?? "";
      const targetRef = c.text("target_ref", req.targetRef, TARGET_REF) ?? "";
      if (targetRef !== "" && to !== undefined && to !== ChangesetState.MERGED) c.add("target_ref", "MERGED_ONLY", "only a transition to MERGED has a target");
      const expected = c.enumValue("expected_state", req.expectedState, ChangesetState, false);
      c.done();
      const toName = changesetStateName(to!)!;
      const facts = new ChangesetFacts(registry, ctx, changesetId!);
      await requireChangesetMover(registry, ctx, changesetId!, toName, facts);
      const guard = independentReviewGuard(registry, ctx, toName, facts);
      const expectedName = expected === undefined ? undefined : changesetStateName(expected);
      const who = moverOf(ctx);
      if (to === ChangesetState.MERGED && deps.landing) {
        const landed = await deps.landing.merge(changesetId!, targetRef, reason, callerAgent(ctx), expectedName, who, guard);
        return { changeset: changesetToWire(landed.changeset), ...(landed.merge ? { merge: mergeToWire(landed.merge) } : {}), unchanged: landed.unchanged };
      }
      const moved = await registry.moveChangeset(changesetId!, toName, reason, { expected: expectedName, who, guard });
      return { changeset: changesetToWire(moved.changeset), unchanged: moved.unchanged };
    },

    async commitChangeset(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      const message = c.text("message", req.message, { max: LIMITS.commitMessage, allowNewlines: true }) ?? "";
      const name = c.text("author.name", req.author?.name ?? "", AUTHOR_PART) ?? "";
      if (name !== "" && !usableIdentName(name)) c.add("author.name", "INVALID_FORMAT", `must hold a character other than spaces, controls and . , : ; " ' \\ (git drops those at either end of a name), got ${JSON.stringify(name)}`);
      const email = c.text("author.email", req.author?.email ?? "", AUTHOR_PART) ?? "";
      c.done();
      await requireChangesetMover(registry, ctx, changesetId!);
      if (!deps.landing) throw new BerthError("unimplemented", "LANDING_UNAVAILABLE", "this server does not land changesets");
      const agentId = callerAgent(ctx);
      const r = await deps.landing.commit({ changesetId: changesetId!, message, author: name || email ? { name, email } : undefined, agentId });
      return { changeset: changesetToWire(r.changeset), commitId: r.commit, ref: r.ref, treeId: r.tree, paths: r.paths, unchanged: r.unchanged };
    },

    ...lifecycleHandlers(deps),
    ...eventHandlers(deps),
    ...overlayHandlers(deps),
    ...claimListHandler(deps),
    ...idPrefixHandler(deps),
    ...diffHandlers(deps),
    ...changesetHandlers(deps),
    ...commentHandlers(deps),
    ...verificationHandlers(deps),
  };
}
