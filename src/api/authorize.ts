/** Authorization helpers for handlers. */
import { invalidArgument, permissionDenied, unauthenticated } from "../platform/errors.js";
import type { Principal, Role } from "../auth/principal.js";

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
