/**
 * Where this instance finds a repository's git objects: the one question every reader and
 * writer of a repository asks (the overlay's base, diffs, rebases, landing, environments), so
 * that none of them reads `source_path` itself.
 *
 * - A repository registered with a `source_path`: that directory, as it always was (read as it
 *   is; nothing fetched, nothing checked first).
 * - One registered with a `remote_url`: this instance's mirror of it (mirror.ts), made sure to
 *   hold the commit asked for, fetched when it does not.
 * - Neither: no git repository (null).
 *
 * It also keeps every mirror of this instance fresh in the background, every
 * BERTH_MIRROR_FETCH_INTERVAL_MS, through an injected scheduler (tests run a tick by hand).
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { BerthError, invalidArgument } from "../platform/errors.js";
import { execGit } from "../platform/git.js";
import { KeyedMutex } from "../platform/keyed-mutex.js";
import { resolveCommit } from "./git-source.js";
import { Mirror, type MirrorProbe } from "./mirror.js";
import { remoteFailure, remoteGit, type RemoteAccess } from "./remote-git.js";
import { redactUrl } from "./remote-url.js";

/** What locating a repository needs of it (the sessions layer's Repository has these). */
export interface RepositoryAddress {
  readonly id: string;
  readonly sourcePath: string | null;
  readonly remoteUrl: string | null;
}

/** Starts `tick` every `intervalMs`; answers how to stop it. */
export type Scheduler = (tick: () => Promise<void>, intervalMs: number) => () => void;

/** What the background fetch reports (a pino logger fits). */
export interface MirrorLog {
  warn(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
}

export interface LocationSettings {
  /** Where the mirrors live: <BERTH_DATA_DIR>/mirrors. Undefined: remote repositories cannot be served (a registry built alone, in tests). */
  readonly mirrorRoot: string | undefined;
  readonly access: RemoteAccess;
  /** BERTH_MIRROR_FETCH_INTERVAL_MS; 0: no background fetch. */
  readonly fetchIntervalMs: number;
  readonly schedule?: Scheduler | undefined;
  readonly log?: MirrorLog | undefined;
  readonly probe?: MirrorProbe | undefined;
}

const intervalScheduler: Scheduler = (tick, intervalMs) => {
  let running = false;
  const timer = setInterval(() => {
    if (running) return; // a slow round is not overtaken by the next
    running = true;
    void tick().finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
};

export class RepositoryLocations {
  private readonly mirrors = new Map<string, Mirror>();
  private readonly mutex = new KeyedMutex<string>();
  private stopTimer: (() => void) | undefined;
  /** Mirrors whose last background fetch failed (reported when it starts failing and when it recovers). */
  private readonly failing = new Set<string>();

  constructor(private readonly settings: LocationSettings) {}

  /** A registry built without a data directory: source paths only. */
  static sourcesOnly(): RepositoryLocations {
    return new RepositoryLocations({ mirrorRoot: undefined, access: { timeoutMs: 60_000 }, fetchIntervalMs: 0 });
  }

  /** Whether the repository has git behind it (a source path or a remote). */
  static hasGit(repo: RepositoryAddress): boolean {
    return repo.sourcePath !== null || repo.remoteUrl !== null;
  }

  /** This instance's mirror of a remote repository (undefined for any other). Made on disk on first use. */
  mirror(repo: RepositoryAddress): Mirror | undefined {
    if (repo.remoteUrl === null) return undefined;
    let m = this.mirrors.get(repo.id);
    if (!m) {
      if (this.settings.mirrorRoot === undefined) throw new Error("this registry has no data directory for mirrors of remote repositories");
      m = new Mirror(repo.id, repo.remoteUrl, this.settings.mirrorRoot, { access: this.settings.access, mutex: this.mutex, probe: this.settings.probe });
      this.mirrors.set(repo.id, m);
    }
    return m;
  }

  /**
   * The directory whose object store holds `commit` of `repo` on this instance; null when the
   * repository has no git behind it. For a remote one the mirror, fetched first when it lacks
   * the commit (REMOTE_UNREACHABLE when the server is out of reach, BASE_COMMIT_GONE when it no
   * longer has it).
   */
  async withCommit(repo: RepositoryAddress, commit: string): Promise<string | null> {
    if (repo.sourcePath !== null) return repo.sourcePath;
    const m = this.mirror(repo);
    if (!m) return null;
    await m.ensure(commit);
    return m.dir;
  }

  /**
   * A commit-ish as a full commit id. A source path resolves it as it is; a remote repository
   * against the server's refs now (a branch name means the server's branch, not the mirror's
   * copy of it), a full id the mirror holds without asking the server.
   */
  async resolve(repo: RepositoryAddress, commitish: string, field = "base_commit"): Promise<string> {
    if (repo.sourcePath !== null) return resolveCommit(repo.sourcePath, commitish, field);
    const m = this.mirror(repo);
    if (!m) throw new Error(`repository ${repo.id} has no git repository to resolve ${commitish} in`);
    return m.resolve(commitish, field);
  }

  /**
   * RegisterRepository's check of a URL: the server is asked for its refs (ls-remote). A
   * server that says there is no repository there is INVALID_ARGUMENT on `remote_url`; one out
   * of reach REMOTE_UNREACHABLE; one that refuses this server's credentials REMOTE_ACCESS_DENIED.
   */
  async probe(url: string): Promise<void> {
    if (this.settings.mirrorRoot === undefined) throw new Error("this registry has no data directory for mirrors of remote repositories");
    // ls-remote runs in a repository of Berth's own: a directory inside someone's work tree would lend git its config (url.*.insteadOf).
    const dir = path.join(this.settings.mirrorRoot, ".probe.git");
    await mkdir(this.settings.mirrorRoot, { recursive: true });
    await execGit(this.settings.mirrorRoot, ["init", "--quiet", "--bare", "--template=", dir], { timeoutMs: 30_000, maxBuffer: 1 << 20 });
    const ctx = { url };
    const r = await remoteGit(dir, ["ls-remote", "--heads", url], this.settings.access, ctx, "ls-remote");
    if (r.code === 0) return;
    const failure = remoteFailure(ctx, "ls-remote", r);
    if (failure.reason === "REMOTE_NOT_A_REPOSITORY") {
      throw invalidArgument([{ field: "remote_url", reason: "NOT_A_GIT_REPOSITORY", description: `${redactUrl(url)}: the server answers that there is no git repository there` }]);
    }
    throw failure;
  }

  /** Starts the background fetch (nothing when the interval is 0). */
  start(): void {
    if (this.settings.fetchIntervalMs <= 0 || this.stopTimer) return;
    this.stopTimer = (this.settings.schedule ?? intervalScheduler)(() => this.fetchAll(), this.settings.fetchIntervalMs);
  }

  stop(): void {
    this.stopTimer?.();
    this.stopTimer = undefined;
  }

  /**
   * One round of the background fetch: every mirror this instance has made, one after another.
   * A server out of reach is logged when it goes and when it comes back, not at every round.
   */
  async fetchAll(): Promise<void> {
    for (const m of [...this.mirrors.values()]) {
      if (!(await m.exists())) continue;
      const wasFailing = this.failing.has(m.repoId);
      try {
        await m.fetch();
        this.failing.delete(m.repoId);
        if (wasFailing) this.settings.log?.info({ repoId: m.repoId, remote: redactUrl(m.url) }, "mirror: the git server is reachable again");
      } catch (err) {
        this.failing.add(m.repoId);
        if (!wasFailing || !(err instanceof BerthError && err.reason === "REMOTE_UNREACHABLE")) {
          const detail = (err as { cause?: unknown }).cause;
          this.settings.log?.warn({ repoId: m.repoId, remote: redactUrl(m.url), reason: err instanceof BerthError ? err.reason : "INTERNAL", detail: detail instanceof Error ? detail.message : undefined }, "mirror: background fetch failed");
        }
      }
    }
  }
}
