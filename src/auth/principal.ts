/**
 * Who is calling, and the contract an authenticator fulfils. These live here, at the bottom of
 * auth/, because everything above (the handlers in api/, the pipeline in transport/) is written
 * against them, while auth/ itself must not reach up into either.
 */

import { ALL_REPOSITORIES, NO_REPOSITORIES, type RepositoryGrants } from "./grants.js";

/**
 * agent: works in sessions of its own; admin: acts for anyone; reviewer: reads and moves changesets
 * (APPROVED, REJECTED, DRAFT, MERGED) of the repositories it is granted without being on them,
 * and owns no session, so it writes no file (src/api/authorize.ts).
 */
export type Role = "agent" | "admin" | "reviewer";

/** Who is calling. With BERTH_AUTH=none the principal is anonymous and trusted (loopback dev). */
export interface Principal {
  /** The authenticated agent id; undefined when auth is off. */
  readonly agentId: string | undefined;
  readonly roles: ReadonlySet<Role>;
  /** True when auth is off: every role is granted and agent ids come from requests. */
  readonly anonymous: boolean;
  /** The repositories it may use (./grants.ts); an admin uses every repository whatever these say. */
  readonly repos: RepositoryGrants;
}

export type HeaderReader = (name: string) => string | undefined;

export interface Authenticator {
  /** Reads the credentials from the request headers; throws BerthError "unauthenticated". */
  authenticate(header: HeaderReader): Promise<Principal> | Principal;
  /** When set, every call gets this principal without reading headers (BERTH_AUTH=none). */
  readonly fixedPrincipal?: Principal;
  /** Releases what it watches (the JWKS file), at shutdown. */
  close?(): void;
  /** What the server logs as warnings at start (e.g. token entries that reach no repository). */
  readonly startupWarnings?: readonly string[];
}

const ROLES: ReadonlySet<string> = new Set<Role>(["agent", "admin", "reviewer"]);

/** Auth off: trusted, every role, agent ids come from requests. */
export const ANONYMOUS_PRINCIPAL: Principal = Object.freeze({
  agentId: undefined,
  roles: new Set<Role>(["agent", "admin"]),
  anonymous: true,
  repos: ALL_REPOSITORIES,
});

/** Principal of calls to auth-exempt services (health) when auth is on. */
export const UNAUTHENTICATED_PRINCIPAL: Principal = Object.freeze({
  agentId: undefined,
  roles: new Set<never>(),
  anonymous: false,
  repos: NO_REPOSITORIES,
});

export function isRole(r: unknown): r is Role {
  return typeof r === "string" && ROLES.has(r);
}

export function principalOf(agentId: string, roles: readonly Role[], repos: RepositoryGrants = NO_REPOSITORIES): Principal {
  return Object.freeze({ agentId, roles: new Set(roles), anonymous: false, repos });
}

/** `authorization: Bearer <token>` → token; undefined when absent; "" when malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header);
  return m ? m[1]! : "";
}
