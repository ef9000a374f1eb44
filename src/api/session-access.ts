/** Who may act on a session: its own agent, an admin, or anyone when auth is off. */
import { permissionDenied } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import type { Principal } from "../auth/principal.js";

export function assertOwnsSession(principal: Principal, ws: Workspace): void {
  if (principal.anonymous || principal.roles.has("admin")) return;
  if (principal.agentId !== ws.agentId) {
    throw permissionDenied("NOT_SESSION_OWNER", `session ${ws.sessionId} belongs to another agent`, { session_id: ws.sessionId });
  }
}
