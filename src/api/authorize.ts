/**
 * Who may do what: the one place every handler asks. The agent a request acts for, the roles,
 * the repository grants (what a grant covers is src/auth/grants.ts; that every RPC checks it,
 * and how, is here), what an agent may see of server-side paths, and the audit record of a call.
 * Sessions: ./session-access.ts establishes the owner, then asks requireRepository here.
 */
import { invalidArgument, permissionDenied, unauthenticated, BerthError } from "../platform/errors.js";
import type { Principal, Role } from "../auth/principal.js";
import { covers, coversId, coversName } from "../auth/grants.js";
import type { Repository } from "../sessions/workspace.js";
import type { CallContext } from "./handler.js";
import { clone } from "@bufbuild/protobuf";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import type { Event } from "../delivery/event-store.js";
import type { ChangesetStateName } from "../platform/schema.js";

/**
 * The agent a request acts for.
 * - Auth off (anonymous principal): `requested` is required (INVALID_ARGUMENT on `field`, reason REQUIRED).
 * - Auth on: empty → the caller's agent id; another agent's id → PERMISSION_DENIED AGENT_MISMATCH,
 *   unless the caller is an admin (admins may act for anyone).
 */
export function effectiveAgentId(principal: Principal, requested: string, field: string): string {
  if (principal.anonymous) {
    if (requested === "") throw invalidArgument([{ field, reason: "REQUIRED", description: "is required" }]);
    return requested;
  }
  if (principal.agentId === undefined) throw unauthenticated("TOKEN_MISSING", "this call needs an authenticated agent");
  // A reviewer (without the agent role) owns no session, so it writes no file: it reviews.
  if (principal.roles.has("reviewer") && !principal.roles.has("agent") && !principal.roles.has("admin")) requireRole(principal, "agent");
  if (requested === "" || requested === principal.agentId) return principal.agentId;
  if (principal.roles.has("admin")) return requested;
  throw permissionDenied("AGENT_MISMATCH", `caller is agent "${principal.agentId}" and may not act for agent "${requested}"`, {
    field,
    caller_agent_id: principal.agentId,
    requested_agent_id: requested,
  });
}

/** Throws PERMISSION_DENIED ROLE_REQUIRED unless the principal has `role`. */
export function requireRole(principal: Principal, role: Role): void {
  if (!principal.roles.has(role)) {
    throw permissionDenied("ROLE_REQUIRED", `the ${role} role is required`, { role });
  }
}

/** An admin, or auth off: acts for any agent, uses every repository, sees server-side paths. */
export function actsForAnyone(principal: Principal): boolean {
  return principal.anonymous || principal.roles.has("admin");
}

/** Server-side paths (environment directories, a repository's source_path) are shown to admins only. */
export function showsServerPaths(principal: Principal): boolean {
  return actsForAnyone(principal);
}

/**
 * Throws PERMISSION_DENIED ROLE_REQUIRED (role admin) when the caller would not be shown
 * server-side paths and asked, in `field`, for a call that is of no use without them.
 */
export function requireServerPaths(principal: Principal, field: string): void {
  if (showsServerPaths(principal)) return;
  throw permissionDenied("ROLE_REQUIRED", `the admin role is required: ${field} asks for a server-side path, which Berth shows to admins only (a token with the admin role, or auth off)`, { role: "admin", field });
}

/** What the grant checks need of the registry. */
export interface RepositoryCatalogue {
  repository(id: string): Promise<Repository>;
}

function notGranted(principal: Principal, repo: string, field: "repo_id" | "name"): BerthError {
  const none = !principal.repos.all && principal.repos.entries.size === 0;
  const hint = none ? ": its token grants no repository (give its token entry or JWT a repos list; see docs/security.md)" : "";
  return permissionDenied("REPOSITORY_NOT_GRANTED", `agent "${principal.agentId ?? ""}" has no grant for repository ${repo}${hint}`, {
    [field]: repo,
    agent_id: principal.agentId ?? "",
  });
}

/**
 * Throws PERMISSION_DENIED REPOSITORY_NOT_GRANTED (naming the repository as the caller named it)
 * unless the caller may use repository `repoId`. Whether an ungranted repository exists is not
 * told: an unknown id is refused the same way, except to a caller granted every repository (the
 * handler's own lookup then answers REPOSITORY_NOT_FOUND).
 */
export async function requireRepository(catalogue: RepositoryCatalogue, principal: Principal, repoId: string): Promise<void> {
  if (await mayUseRepository(catalogue, principal, repoId)) return;
  throw notGranted(principal, repoId, "repo_id");
}

/** RegisterRepository: the name must be granted (by name or "*"): a repository has no id yet. */
export function requireRepositoryName(principal: Principal, name: string): void {
  if (actsForAnyone(principal) || coversName(principal.repos, name)) return;
  throw notGranted(principal, name, "name");
}

/** Whether the caller may use repository `repoId` (an unknown id: only with "*"). */
export async function mayUseRepository(catalogue: RepositoryCatalogue, principal: Principal, repoId: string): Promise<boolean> {
  if (actsForAnyone(principal) || coversId(principal.repos, repoId)) return true;
  if (principal.repos.entries.size === 0) return false;
  try {
    return covers(principal.repos, await catalogue.repository(repoId));
  } catch (err) {
    if (err instanceof BerthError && err.kind === "not_found") return false;
    throw err;
  }
}

/** Whether the caller may see this repository in a list (ListRepositories). */
export function seesRepository(principal: Principal, repo: Repository): boolean {
  return actsForAnyone(principal) || covers(principal.repos, repo);
}

/**
 * The read model of streams (WatchEvents, WatchTurns): whether the caller may see an event of
 * repository `repoId`, remembered per repository for the life of the stream. Events of no
 * repository are shown to admins only.
 */
export function repositoryVisibility(catalogue: RepositoryCatalogue, principal: Principal): (repoId: string) => boolean | Promise<boolean> {
  if (actsForAnyone(principal)) return () => true;
  if (principal.repos.all) return (repoId) => repoId !== "";
  const known = new Map<string, boolean>();
  return (repoId) => {
    if (repoId === "") return false;
    const seen = known.get(repoId);
    if (seen !== undefined) return seen;
    return mayUseRepository(catalogue, principal, repoId).then((ok) => {
      known.set(repoId, ok);
      return ok;
    });
  };
}

/** The log field holding a call's audit record; the pipeline writes it as its own line (msg "audit"). */
export const AUDIT_FIELD = "audit";

export interface AuditRecord {
  readonly event: "permission_denied" | "admin_action";
  /** What was acted on: session_id, agent_id (the other principal), repo_id, changeset_id, … */
  readonly target: Readonly<Record<string, string>>;
}

/**
 * Records that an admin acted on what belongs to another principal (their session, for another
 * agent, on a changeset the admin is not on). Nothing with auth off: there is no other principal.
 * Several notes of one call merge into its one audit line.
 */
export function auditAdminAction(ctx: CallContext, target: Record<string, string>): void {
  const p = ctx.principal;
  if (p.anonymous || !p.roles.has("admin")) return;
  const before = ctx.logFields[AUDIT_FIELD] as AuditRecord | undefined;
  const record: AuditRecord = { event: "admin_action", target: { ...before?.target, ...target } };
  ctx.logFields[AUDIT_FIELD] = record;
}

/**
 * Who may work on an existing changeset (join it with CreateWorkspace{changeset_id}, move it with
 * TransitionChangeset): an agent that has or had a session on it, or an admin (audited). Anyone
 * else is refused with `reason` (CHANGESET_NOT_JOINABLE, NOT_CHANGESET_OWNER), whether or not
 * the changeset exists: its id tells an outsider nothing. `agents`: registry.agentsOfChangeset.
 */
export async function requireChangesetMember(
  ctx: CallContext,
  changesetId: string,
  agents: () => Promise<readonly string[]>,
  reason: "CHANGESET_NOT_JOINABLE" | "NOT_CHANGESET_OWNER",
  /** A reviewer may do this too (read the changeset, or move it to a state of REVIEWER_STATES); its grant is checked after. */
  reviewerMay = false,
): Promise<void> {
  const p = ctx.principal;
  if (p.anonymous) return;
  const member = p.agentId !== undefined && (await agents()).includes(p.agentId);
  if (member) return;
  if (actsForAnyone(p)) {
    auditAdminAction(ctx, { changeset_id: changesetId });
    return;
  }
  if (reviewerMay && p.roles.has("reviewer")) return;
  const verb = reason === "CHANGESET_NOT_JOINABLE" ? "joined" : "moved or diffed";
  throw permissionDenied(reason, `changeset ${changesetId} may be ${verb} only by an agent that works on it (or an admin); ${p.agentId ?? ""} does not`, {
    changeset_id: changesetId,
    agent_id: p.agentId ?? "",
  });
}

/** The states a reviewer moves a changeset to without being on it (its decisions, and sending it back). */
export const REVIEWER_STATES: ReadonlySet<ChangesetStateName> = new Set(["approved", "rejected", "draft", "merged"]);

/** The states separation of duties keeps from the changeset's authors. */
const INDEPENDENT_STATES: ReadonlySet<ChangesetStateName> = new Set(["approved", "merged"]);

/**
 * Separation of duties, the one rule: under the repository's `independent_review` policy, APPROVED
 * and MERGED come from a principal other than the changeset's authors (the agents with a session on
 * it) — a reviewer or an admin not on it. PERMISSION_DENIED INDEPENDENT_REVIEW_REQUIRED: it is who
 * calls that is wrong, not the changeset's state, and the same caller retrying changes nothing.
 * With auth off there is one anonymous principal and no one to tell apart: not enforced
 * (docs/security.md). `policy` is read from PostgreSQL for each call, so an UpdateRepository on
 * any instance holds at once.
 */
export async function requireIndependentReview(
  ctx: CallContext,
  changesetId: string,
  to: ChangesetStateName,
  policy: () => Promise<boolean>,
  agents: () => Promise<readonly string[]>,
): Promise<void> {
  const p = ctx.principal;
  if (p.anonymous || !INDEPENDENT_STATES.has(to)) return;
  if (p.agentId === undefined || !(await agents()).includes(p.agentId)) return;
  if (!(await policy())) return;
  throw permissionDenied(
    "INDEPENDENT_REVIEW_REQUIRED",
    `changeset ${changesetId} may be moved to ${to.toUpperCase()} only by a principal other than its authors (a reviewer or an admin): its repository requires independent review, and ${p.agentId} has a session on it`,
    { changeset_id: changesetId, agent_id: p.agentId, to_state: to.toUpperCase(), rule: "independent_review" },
  );
}

const redacted = new WeakMap<Event, Event>();

/**
 * The event as the caller may see it: env.evicted names the environment's directory on the
 * server, shown to admins only (an agent gets it with environment_path empty). The copy is made
 * once per event and shared by every agent's stream.
 */
export function eventForCaller(principal: Principal, event: Event): Event {
  if (showsServerPaths(principal) || event.payload.case !== "environmentEvicted" || event.payload.value.environmentPath === "") return event;
  let copy = redacted.get(event);
  if (copy === undefined) {
    copy = clone(EventSchema, event);
    if (copy.payload.case === "environmentEvicted") copy.payload.value.environmentPath = "";
    redacted.set(event, copy);
  }
  return copy;
}
