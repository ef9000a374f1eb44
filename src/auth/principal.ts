import type { Principal, Role } from "../api/handler.js";

const ROLES: ReadonlySet<string> = new Set<Role>(["agent", "admin"]);

/** Auth off: trusted, every role, agent ids come from requests. */
export const ANONYMOUS_PRINCIPAL: Principal = Object.freeze({
  agentId: undefined,
  roles: new Set<Role>(["agent", "admin"]),
  anonymous: true,
});

export function isRole(r: unknown): r is Role {
  return typeof r === "string" && ROLES.has(r);
}

export function principalOf(agentId: string, roles: readonly Role[]): Principal {
  return Object.freeze({ agentId, roles: new Set(roles), anonymous: false });
}

/** `authorization: Bearer <token>` → token; undefined when absent; "" when malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  return m ? m[1]! : "";
}
