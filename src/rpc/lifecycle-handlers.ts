/**
 * Heartbeat, AttachSession, StrandSession, ResumeSession, AbandonSession (issue 3).
 * The behaviour lives in src/lifecycle/lifecycle.ts; these translate and check the caller.
 */
import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { EventSchema } from "../../gen/berth/v1/event_pb.js";
import { AbandonCause, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { effectiveAgentId, requireRole } from "../auth/authorize.js";
import type { EventInput } from "../events/outbox.js";
import { lifecycleOf, type AbandonCause as CauseName } from "../lifecycle/lifecycle.js";
import type { ServiceHandlers } from "./handler.js";
import { assertOwnsSession } from "./session-access.js";
import { AGENT_ID, Check, LIMITS } from "./validate.js";
import { workspaceToWire } from "./wire.js";
import { activeSession, type WorkspaceServiceDeps } from "./workspace-service.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;

/** Events after which the session is no longer active: its AttachSession stream ends. */
const ENDING = new Set(["session.stranded", "session.abandoned", "session.destroyed", "session.expired"]);

/**
 * An AttachSession notice. Notices are pushed in-process right after the commit that stored the
 * event, so they carry seq 0; WatchEvents is the ordered, resumable log of the same events.
 */
function noticeToWire(e: EventInput): MessageInitShape<typeof EventSchema> {
  return {
    id: randomUUID(),
    kind: e.kind,
    repoId: e.repoId,
    sessionId: e.sessionId ?? "",
    workspaceId: e.workspaceId ?? "",
    agentId: e.agentId ?? "",
    changesetId: e.changesetId ?? "",
    occurredAt: timestampFromMs(e.occurredAt),
    reason: e.reason ?? "",
    ...(e.payload ? { payload: e.payload } : {}),
  } as MessageInitShape<typeof EventSchema>;
}

export function lifecycleHandlers(
  deps: WorkspaceServiceDeps,
): Pick<Methods, "heartbeat" | "attachSession" | "strandSession" | "resumeSession" | "abandonSession"> {
  const { registry } = deps;
  return {
    async heartbeat(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      await activeSession(deps, sessionId!, ctx);
      return { leaseMs: lifecycleOf(registry).settings.leaseMs };
    },

    async *attachSession(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      const ws = await activeSession(deps, sessionId!, ctx);
      const queue: EventInput[] = [];
      let wake: (() => void) | undefined;
      const unsubscribe = registry.subscribe(ws.sessionId, (e) => {
        queue.push(e);
        wake?.();
      });
      const signal = ctx.signal;
      const onAbort = () => wake?.();
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        // Stranded or ended between the lookup and the subscription: answer as any other call.
        await registry.requireActive(ws.sessionId);
        yield { message: { case: "workspace", value: workspaceToWire(ws) } };
        for (;;) {
          while (queue.length === 0 && !signal.aborted) await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          if (signal.aborted) return;
          const e = queue.shift()!;
          yield { message: { case: "event", value: noticeToWire(e) } };
          if (ENDING.has(e.kind)) return;
        }
      } finally {
        unsubscribe();
        signal.removeEventListener("abort", onAbort);
        // The lease runs from the moment the stream closed.
        registry.touch(ws);
      }
    },

    async strandSession(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const reason = c.text("reason", req.reason, { max: LIMITS.reason }) ?? "";
      c.done();
      ctx.logFields.sessionId = sessionId;
      const ws = await registry.getWorkspace(sessionId!);
      assertOwnsSession(ctx.principal, ws);
      const stranded = await lifecycleOf(registry).strand(sessionId!, reason || "explicit");
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
      const ws = await lifecycleOf(registry).resume(dead!, agentId);
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
      const ws = await registry.getWorkspace(sessionId!);
      assertOwnsSession(ctx.principal, ws);
      const name: CauseName = cause === AbandonCause.ADMIN ? "admin" : "explicit";
      const abandoned = await lifecycleOf(registry).abandon(sessionId!, name, reason);
      return { workspace: workspaceToWire(abandoned) };
    },
  };
}
