/**
 * Heartbeat, AttachSession, StrandSession, ResumeSession, AbandonSession (issue 3).
 * The behaviour lives in src/sessions/lifecycle.ts; these translate and check the caller.
 */
import { AbandonCause, type WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { actsForAnyone, auditAdminAction, effectiveAgentId, eventForCaller, requireRepository, requireRole } from "./authorize.js";
import { BerthError } from "../platform/errors.js";
import type { Principal } from "../auth/principal.js";
import type { AbandonCause as CauseName } from "../sessions/lifecycle.js";
import type { ServiceHandlers } from "./handler.js";
import { isSessionActivity, ownedSession } from "./session-access.js";
import { moverOf } from "./changeset-access.js";
import { AGENT_ID, Check, LIMITS } from "./validate.js";
import { workspaceToWire } from "./wire.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";
import { endedLifecycle } from "../sessions/session-hooks.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;

/** Events after which the session is no longer active: its AttachSession stream ends. */

export function lifecycleHandlers(
  deps: WorkspaceServiceDeps,
): Pick<Methods, "heartbeat" | "attachSession" | "strandSession" | "resumeSession" | "abandonSession"> {
  const { registry } = deps;
  /**
   * ResumeSession's grant check: the owner's grant on the dead session's repository. A session of
   * another agent, or one that cannot be read as it is (resumed, unknown), is left to the resume
   * to refuse, as it does (AGENT_MISMATCH, ALREADY_RESUMED, SESSION_NOT_FOUND): nothing of another
   * agent's session is told here.
   */
  const requireGrantOfOwnSession = async (principal: Principal, sessionId: string, agentId: string) => {
    let ws;
    try {
      ws = await registry.getWorkspace(sessionId);
    } catch (err) {
      if (err instanceof BerthError && err.kind !== "internal") return;
      throw err;
    }
    if (ws.agentId === agentId) await requireRepository(registry, principal, ws.repoId);
  };
  return {
    async heartbeat(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      const ws = await ownedSession(registry, ctx, sessionId!, "active");
      // An admin's or an observer's heartbeat answers the lease without renewing it (isSessionActivity).
      if (isSessionActivity(ctx, ws)) await registry.renewLease(ws);
      return { leaseMs: deps.lifecycle.settings.leaseMs };
    },

    async *attachSession(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      const ws = await ownedSession(registry, ctx, sessionId!, "active");
      // An open stream keeps the session connected only when its agent holds it; a watcher's stream does not.
      const agent = isSessionActivity(ctx, ws);
      const detach = agent ? registry.attach(ws) : () => undefined;
      try {
        // The hub first catches up with what committed before the attach (session.created is
        // history, not a notice); then the subscription is taken before the workspace is sent,
        // so no notice between the two is missed. Notices are stored events, with their seq,
        // from every instance.
        await deps.events.sync();
        const notices = deps.events.watch({ sessionIds: [ws.sessionId] }, ctx.signal);
        // Stranded or ended between the lookup and the subscription: answer as any other call.
        await registry.requireActive(ws.sessionId);
        yield { message: { case: "workspace", value: workspaceToWire(ws) } };
        for await (const event of notices) {
          yield { message: { case: "event", value: eventForCaller(ctx.principal, event) } };
          if (endedLifecycle(event.kind)) return;
        }
      } finally {
        detach();
        // The lease runs from the moment the agent's stream closed.
        if (agent) registry.touch(ws);
      }
    },

    async strandSession(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const reason = c.text("reason", req.reason, { max: LIMITS.reason }) ?? "";
      c.done();
      await ownedSession(registry, ctx, sessionId!, "any");
      const stranded = await deps.lifecycle.strand(sessionId!, reason || "explicit");
      return { workspace: workspaceToWire(stranded) };
    },

    async resumeSession(req, ctx) {
      const c = new Check();
      const dead = c.uuid("dead_session_id", req.deadSessionId);
      const requested = c.text("agent_id", req.agentId, AGENT_ID) ?? "";
      c.done();
      ctx.logFields.sessionId = dead;
      // Auth on: the caller's own agent (an admin may name another); auth off: required.
      const agentId = effectiveAgentId(ctx.principal, requested, "agent_id");
      if (agentId !== ctx.principal.agentId) auditAdminAction(ctx, { agent_id: agentId });
      if (!actsForAnyone(ctx.principal)) await requireGrantOfOwnSession(ctx.principal, dead!, agentId);
      // A turn that was running when the session was stranded is captured into the overlay by
      // the instance that ran it; the resume waits for that, so the resumed session has it
      // (docs/lifecycle.md). Any other state is the resume's own answer, given below.
      const before = await registry.getWorkspace(dead!).catch(() => undefined);
      if (before?.lifecycle === "stranded" && before.agentId === agentId) {
        const waitStart = performance.now();
        await deps.captures?.captureSettled(before.workspaceId, ctx.deadline);
        ctx.logFields.captureWaitMs = Math.round(performance.now() - waitStart);
      }
      const ws = await deps.lifecycle.resume(dead!, agentId);
      ctx.logFields.newSessionId = ws.sessionId;
      return { newSessionId: ws.sessionId, workspace: workspaceToWire(ws) };
    },

    async abandonSession(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const reason = c.text("reason", req.reason, { max: LIMITS.reason }) ?? "";
      const cause = c.enumValue("cause", req.cause, AbandonCause, false) ?? AbandonCause.EXPLICIT;
      c.done();
      ctx.logFields.sessionId = sessionId;
      if (cause === AbandonCause.ADMIN) requireRole(ctx.principal, "admin");
      await ownedSession(registry, ctx, sessionId!, "any");
      const name: CauseName = cause === AbandonCause.ADMIN ? "admin" : "explicit";
      const abandoned = await deps.lifecycle.abandon(sessionId!, name, reason, moverOf(ctx));
      return { workspace: workspaceToWire(abandoned) };
    },
  };
}
