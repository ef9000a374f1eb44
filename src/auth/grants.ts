/**
 * Repository grants: which repositories a principal may use. A grant names a repository by its
 * name or its id, or is "*" (every repository). The rule of what a grant covers lives here; where
 * it is enforced (every RPC) is src/api/authorize.ts.
 */

export interface RepositoryGrants {
  /** "*": every repository, registered now or later. */
  readonly all: boolean;
  /** Repository names and ids (ids lower-case). */
  readonly entries: ReadonlySet<string>;
}

export const ALL_REPOSITORIES: RepositoryGrants = Object.freeze({ all: true, entries: new Set<string>() });

/**
 * No repository. The default of a token entry or a JWT without `repos`: a credential issued
 * before grants existed must not silently reach every repository (docs/decisions.md).
 */
export const NO_REPOSITORIES: RepositoryGrants = Object.freeze({ all: false, entries: new Set<string>() });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The grants of a `repos` list (already checked to be strings). */
export function grantsOf(repos: readonly string[]): RepositoryGrants {
  if (repos.includes("*")) return ALL_REPOSITORIES;
  if (repos.length === 0) return NO_REPOSITORIES;
  return Object.freeze({ all: false, entries: new Set(repos.map((r) => (UUID.test(r) ? r.toLowerCase() : r))) });
}

/** Why a `repos` value is not a list of grants, or undefined when it is one. */
export function reposProblem(repos: unknown): string | undefined {
  if (!Array.isArray(repos)) return 'must be a list of repository names, ids or "*"';
  const bad = repos.findIndex((r) => typeof r !== "string" || r === "" || r.length > 256);
  return bad < 0 ? undefined : `[${bad}] must be a repository name, id or "*" (a non-empty string)`;
}

/** Whether the grants cover the repository with this id (lower-case) and name. */
export function covers(grants: RepositoryGrants, repo: { readonly id: string; readonly name: string }): boolean {
  return grants.all || grants.entries.has(repo.id) || grants.entries.has(repo.name);
}

/** Whether the grants cover a repository known only by id (its name not looked up). */
export function coversId(grants: RepositoryGrants, repoId: string): boolean {
  return grants.all || grants.entries.has(repoId);
}

/** Whether the grants cover a repository named `name` (before it has an id: RegisterRepository). */
export function coversName(grants: RepositoryGrants, name: string): boolean {
  return grants.all || grants.entries.has(name);
}
