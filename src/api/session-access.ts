/**
 * Who may act on a session: its own agent, an admin, or anyone when auth is off.
 *
 * Every handler that takes a session id (or a turn, which names one) goes through
 * ownedSession, so there is one rule and one order: the owner is established first, before
 * anything about the session's state is answered, and a session whose owner cannot be
 * established is refused. A resumed session's old id has no workspace row of its own; its
 * owner is the owner of the workspace it was resumed into. Once the owner is established, the
 * owner's grant on the session's repository is checked (./authorize.ts): a revoked grant stops
 * the owner's own sessions too. An admin's use of another agent's session is audited.
 */
import type { Principal } from "../auth/principal.js";
import { BerthError, permissionDenied } from "../platform/errors.js";
import { assertActive, sessionFacts, type SessionFacts, type WorkspaceRegistry } from "../sessions/registry.js";
import type { Workspace } from "../sessions/workspace.js";
import type { CallContext } from "./handler.js";
import { actsForAnyone, auditAdminAction, requireRepository } from "./authorize.js";

/** What the check needs of the registry. */
export type SessionRegistry = Pick<WorkspaceRegistry, "getWorkspace" | "touch" | "repository">;

/** ownedLiveSession's: the live objects too. */
export type LiveSessionRegistry = SessionRegistry & Pick<WorkspaceRegistry, "liveWorkspace">;

/**
 * - "active": the session must be active (FAILED_PRECONDITION otherwise, as the registry says);
 *   its activity is recorded when the caller is its agent (isSessionActivity). Heartbeat, AttachSession, the file and symbol RPCs, BeginTurn, …
 * - "any": any lifecycle state (GetWorkspace, StrandSession, AbandonSession, DestroyWorkspace);
 *   a resumed session's old id answers SESSION_RESUMED, to its owner.
 * - "turns": the session a turn was begun on, which may since have been resumed under a new
 *   id; the turns of the old id stay its owner's. Answers the workspace it now lives in.
 */
export type SessionUse = "active" | "any" | "turns";

/**
 * The header an observer sends on every call (the console: `berth-observer: 1`). With auth off
 * every caller is the one anonymous principal, so the call has to say that it only watches.
 */
export const OBSERVER_HEADER = "berth-observer";

/**
 * Whether a call about `ws` is its agent's activity, which keeps the session connected (its lease):
 * only the session's own agent — its calls, heartbeats, streams and turns. Someone watching it (an
 * admin, the console) must not keep a dead agent's session from stranding (issue 29). Auth on: the
 * principal's agent id is the session's. Auth off: any call not marked with OBSERVER_HEADER.
 */
export function isSessionActivity(ctx: Pick<CallContext, "principal" | "requestHeader">, ws: Workspace): boolean {
  if (ctx.requestHeader(OBSERVER_HEADER) === "1") return false;
  return ctx.principal.anonymous || (ctx.principal.agentId !== undefined && ctx.principal.agentId === ws.agentId);
}

/** Resumes of one workspace followed at most, old id → new id (a chain longer than this is refused). */
const MAX_RESUMES = 64;

/** True when the principal may act for `agentId` (the owner of a session, an event, a turn). */
export function actsFor(principal: Principal, agentId: string | undefined): boolean {
  return actsForAnyone(principal) || (principal.agentId !== undefined && principal.agentId === agentId);
}

/**
 * The workspace of `sessionId` if the caller may act on it for `use`; otherwise PERMISSION_DENIED
 * NOT_SESSION_OWNER (or what the registry answers: SESSION_NOT_FOUND, SESSION_STRANDED, …, which
 * only the owner gets to see). Tags the call's log line with the session id.
 */
export async function ownedSession(registry: SessionRegistry, ctx: CallContext, sessionId: string, use: SessionUse): Promise<Workspace> {
  ctx.logFields.sessionId = sessionId;
  const principal = ctx.principal;
  let ws: Workspace;
  try {
    ws = await registry.getWorkspace(sessionId);
  } catch (err) {
    if (!isResumed(err)) throw err;
    const anyone = actsForAnyone(principal);
    // No owner to establish for a caller who may act for anyone: the registry's answer stands.
    if (anyone && use !== "turns") throw err;
    const current = await resumedInto(registry, err);
    if (current === undefined) throw anyone ? err : notOwner(sessionId);
    const granted = owned(registry, ctx, current, sessionId);
    if (granted) await granted;
    if (use !== "turns") throw err;
    return current;
  }
  const granted = owned(registry, ctx, ws, sessionId);
  if (granted) await granted;
  if (use === "active") useActive(registry, ctx, ws);
  return ws;
}

/**
 * ownedSession's "active" check of a session held live on this instance, made on its live object
 * without reading the row: the same rules (owner, grant, assertActive) in the same order, and the
 * facts they relied on (SessionFacts), taken in the same tick as assertActive. The caller's write
 * must find those facts in the row (it skips the read; the BeginTurn of a parked environment folds
 * it into the turn row's insert: turns/store.ts) and, when it does not, ask ownedSession, whose
 * answer is the one given. Undefined when the session is not held live here or the live object is
 * refused: the row decides then (ownedSession), so a refusal always reads the database first, as
 * ownedSession does.
 */
export async function ownedLiveSession(registry: LiveSessionRegistry, ctx: CallContext, sessionId: string): Promise<{ ws: Workspace; facts: SessionFacts } | undefined> {
  const ws = registry.liveWorkspace(sessionId);
  if (ws === undefined) return undefined;
  ctx.logFields.sessionId = sessionId;
  try {
    const granted = owned(registry, ctx, ws, sessionId);
    if (granted) await granted;
    useActive(registry, ctx, ws);
  } catch {
    return undefined;
  }
  return { ws, facts: sessionFacts(ws) };
}

/** Past the registry's read: the owner first, then the grant (a promise only when it must be looked up). */
function owned(registry: SessionRegistry, ctx: CallContext, ws: Workspace, sessionId: string): Promise<void> | undefined {
  if (!actsFor(ctx.principal, ws.agentId)) throw notOwner(sessionId);
  return permitted(registry, ctx, ws, sessionId);
}

/** "active": the session must be active; its agent's activity is recorded (a watcher's is not). */
function useActive(registry: SessionRegistry, ctx: CallContext, ws: Workspace): void {
  assertActive(ws);
  if (isSessionActivity(ctx, ws)) registry.touch(ws);
}

/** Past the owner: the grant on the session's repository; an admin's use of another's session audited. */
function permitted(registry: SessionRegistry, ctx: CallContext, ws: Workspace, sessionId: string): Promise<void> | undefined {
  const p = ctx.principal;
  // Auth off or an admin: no grant to look up, and no await (the hot path of BERTH_AUTH=none stays as it was).
  if (!actsForAnyone(p)) return requireRepository(registry, p, ws.repoId);
  if (ws.agentId !== p.agentId) auditAdminAction(ctx, { session_id: sessionId, agent_id: ws.agentId, repo_id: ws.repoId });
  return undefined;
}

function isResumed(err: unknown): err is BerthError {
  return err instanceof BerthError && err.reason === "SESSION_RESUMED";
}

/**
 * The workspace a resumed session id now lives in, following its resumes (old → new → newer);
 * undefined when no such workspace can be found. Other failures (the database) propagate.
 */
async function resumedInto(registry: SessionRegistry, resumed: BerthError): Promise<Workspace | undefined> {
  let err = resumed;
  for (let hop = 0; hop < MAX_RESUMES; hop++) {
    const next = err.metadata["new_session_id"];
    if (next === undefined || next === "") return undefined;
    try {
      return await registry.getWorkspace(next);
    } catch (e) {
      if (e instanceof BerthError && e.kind === "not_found") return undefined;
      if (!isResumed(e)) throw e;
      err = e;
    }
  }
  return undefined;
}

function notOwner(sessionId: string): BerthError {
  return permissionDenied("NOT_SESSION_OWNER", `session ${sessionId} belongs to another agent`, { session_id: sessionId });
}
