/**
 * Repositories change rarely and are read on every CreateWorkspace and overlay call; their cache
 * and registration are kept apart from the workspaces so the registry is not also the
 * repository catalogue.
 */
import type { Clock } from "../platform/clock.js";
import { BerthError, notFound } from "../platform/errors.js";
import type { Db } from "../platform/database.js";
import type { Repository, RepositoryCheck } from "./workspace.js";
import { checkGitRepository } from "../repository/git-source.js";
import type { RepositoryLocations } from "../repository/locations.js";
import { checkRemoteUrl } from "../repository/remote-url.js";
import * as sqlRepo from "./registry.repository.js";

export class Repositories {
  private readonly repos = new Map<string, Repository>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly newId: () => string,
    private readonly locations: RepositoryLocations,
  ) {}

  /** Loads every repository into memory (registry.load()). */
  async load(): Promise<void> {
    for (const row of await sqlRepo.listRepositories(this.db)) this.repos.set(row.id, repositoryFromRow(row));
  }

  /**
   * Registers a repository: with a source path (checked to be a git repository), a remote URL
   * (checked to hold no credentials, and its server asked for its refs), or neither. With a
   * `requestId`, a retry of a registration that succeeded is answered with the repository it
   * registered (the same name, location and excludes), not REPOSITORY_EXISTS.
   */
  async registerRepository(name: string, location: RepositoryLocation, captureExclude: readonly string[] = [], requestId = "", independentReview = true): Promise<Repository> {
    const resolved = location.sourcePath ? await checkGitRepository(location.sourcePath) : null;
    const remoteUrl = location.remoteUrl ? checkRemoteUrl(location.remoteUrl) : null;
    if (remoteUrl !== null) await this.locations.probe(remoteUrl);
    const repo: Repository = { id: this.newId(), name, sourcePath: resolved, remoteUrl, createdAt: this.clock.now(), captureExclude: [...captureExclude], independentReview };
    try {
      await sqlRepo.insertRepository(this.db, {
        id: repo.id,
        name: repo.name,
        source_path: repo.sourcePath,
        remote_url: repo.remoteUrl,
        created_at: new Date(repo.createdAt),
        capture_exclude: [...repo.captureExclude],
        request_id: requestId === "" ? null : requestId,
        independent_review: independentReview,
      });
    } catch (err) {
      if (sqlRepo.isUniqueViolation(err)) {
        const prior = requestId === "" ? undefined : await sqlRepo.findRepositoryByName(this.db, name);
        if (
          prior !== undefined &&
          prior.request_id === requestId &&
          prior.source_path === resolved &&
          prior.remote_url === remoteUrl &&
          sameList(prior.capture_exclude, repo.captureExclude) &&
          prior.independent_review === independentReview
        ) {
          return repositoryFromRow(prior);
        }
        throw new BerthError("already_exists", "REPOSITORY_EXISTS", `a repository named "${name}" is already registered`, { name });
      }
      throw err;
    }
    this.repos.set(repo.id, repo);
    return repo;
  }

  async listRepositories(): Promise<Repository[]> {
    const rows = await sqlRepo.listRepositories(this.db);
    for (const row of rows) if (!this.repos.has(row.id)) this.repos.set(row.id, repositoryFromRow(row));
    return rows.map(repositoryFromRow);
  }

  /** A page of repositories by name, after `afterName`. */
  async repositoriesAfter(afterName: string | undefined, limit: number): Promise<Repository[]> {
    return (await sqlRepo.listRepositoriesAfter(this.db, afterName, limit)).map(repositoryFromRow);
  }

  /**
   * SetRepositoryCheck: the repository's check, or none (null). Whether a transition to VERIFYING
   * runs one is read from the row in that transition's transaction, never from this cache: an
   * instance that has not heard of the change still decides as the database says.
   */
  async setCheck(id: string, check: RepositoryCheck | null): Promise<Repository> {
    const row = await sqlRepo.setRepositoryCheck(this.db, id, check && { argv: [...check.argv], timeoutSeconds: check.timeoutSeconds });
    if (!row) throw repositoryNotFound(id);
    const repo = repositoryFromRow(row);
    this.repos.set(id, repo);
    return repo;
  }

  /** Changes a repository's settings (UpdateRepository): one statement; every instance reads the policy from the row. */
  async updateRepository(id: string, set: { independentReview?: boolean | undefined }): Promise<Repository> {
    const row = await sqlRepo.updateRepositorySettings(this.db, id, { ...(set.independentReview !== undefined ? { independent_review: set.independentReview } : {}) });
    if (!row) throw repositoryNotFound(id);
    const repo = repositoryFromRow(row);
    this.repos.set(id, repo);
    return repo;
  }

  /** Whether a changeset's repository requires independent review, read from PostgreSQL (never the cache). */
  async independentReviewOfChangeset(changesetId: string): Promise<boolean> {
    return (await sqlRepo.independentReviewOfChangeset(this.db, changesetId)) ?? false;
  }

  async repository(id: string): Promise<Repository> {
    const cached = this.repos.get(id);
    if (cached) return cached;
    const row = await sqlRepo.findRepository(this.db, id);
    if (!row) throw repositoryNotFound(id);
    const repo = repositoryFromRow(row);
    this.repos.set(id, repo);
    return repo;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export function repositoryNotFound(repoId: string): BerthError {
  return notFound("REPOSITORY_NOT_FOUND", `repository ${repoId} is not registered`, { repo_id: repoId });
}

function repositoryFromRow(row: sqlRepo.RepositoryRow): Repository {
  const check = row.check_argv && row.check_argv.length > 0 ? { argv: row.check_argv, timeoutSeconds: row.check_timeout_seconds ?? DEFAULT_CHECK_TIMEOUT_SECONDS } : undefined;
  return { id: row.id, name: row.name, sourcePath: row.source_path, remoteUrl: row.remote_url, createdAt: row.created_at.getTime(), captureExclude: row.capture_exclude, independentReview: row.independent_review, ...(check ? { check } : {}) };
}

/** A check set with timeout_seconds 0 (unset) may run this long. */
export const DEFAULT_CHECK_TIMEOUT_SECONDS = 600;

/** Where a repository being registered lives: at most one of the two (the API refuses both). */
export interface RepositoryLocation {
  readonly sourcePath?: string | undefined;
  readonly remoteUrl?: string | undefined;
}
