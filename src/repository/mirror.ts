/**
 * This instance's mirror of a repository on a git server (docs/landing-work.md, "Repositories on
 * a git server"): a bare repository of Berth's own, `<BERTH_DATA_DIR>/mirrors/<repo_id>.git`,
 * holding the server's branches and tags (`refs/heads/*`, `refs/tags/*`, HEAD naming the
 * server's default branch) and every object it ever fetched. Nothing in it is shared with
 * another instance: each instance has its own, and they meet only at the server.
 *
 * - Created on first use (`git init --bare --template=`: no sample hooks), with `gc.auto=0` and
 *   `gc.pruneExpire=never`: environments borrow its objects (alternates), and a commit the server
 *   has since dropped (a rewritten history) must stay readable for the workspaces based on it.
 * - A fetch asks the server for its refs (`ls-remote --symref`, one connection), and only when
 *   they differ from the mirror's fetches them (`--prune`: a branch deleted there goes here too;
 *   its objects stay). One fetch, push or ref update of a mirror at a time within the instance
 *   (a keyed mutex); a fetch asked for while one is queued joins it, so a burst of calls that
 *   each need the server's current refs costs one fetch after the running one, not one each,
 *   and every caller's answer was read after it asked.
 * - A commit the mirror has is read without the server (offline work goes on); one it lacks is
 *   fetched (the refs, then the commit by id: a server gives a reachable commit it does not
 *   advertise), and one the server no longer has either is BASE_COMMIT_GONE.
 * - A push (landing) moves the server's refs with a lease on what Berth read, several at once
 *   `--atomic`, and then the mirror's own refs to what the server accepted.
 */
import { access, mkdir } from "node:fs/promises";
import path from "node:path";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import { execGit, runGit } from "../platform/git.js";
import type { KeyedMutex } from "../platform/keyed-mutex.js";
import { resolveCommit } from "./git-source.js";
import { remoteFailure, remoteGit, type RemoteAccess, type RemoteContext } from "./remote-git.js";

const LOCAL = { timeoutMs: 30_000, maxBuffer: 64 << 20 } as const;
const FULL_OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** One ref a push moves: to `next`, if the server's still names `expected` (undefined: does not exist). */
export interface RefUpdate {
  readonly ref: string;
  readonly next: string;
  readonly expected: string | undefined;
}

/** What a push did: everything, or nothing because `ref` was not at `expected` on the server (it was at `actual`). */
export type PushResult = { readonly ok: true } | { readonly ok: false; readonly ref: string; readonly expected: string | undefined; readonly actual: string | undefined };

/** The server's refs as a fetch read them: its branches and tags, and the branch its HEAD names. */
export interface RemoteView {
  readonly head: string | undefined;
  readonly refs: ReadonlyMap<string, string>;
}

/** A test seam around the mirror's git work (tests count overlapping fetches). */
export interface MirrorProbe {
  readonly gitStarted?: (repoId: string, operation: "fetch" | "push") => void;
  readonly gitEnded?: (repoId: string, operation: "fetch" | "push") => void;
}

export class Mirror {
  readonly dir: string;
  /** Commits known to be in the mirror (objects are never pruned: once in, always in). */
  private readonly known = new Set<string>();
  /** A fetch asked for and not started yet: a later ask joins it. */
  private queued: Promise<RemoteView> | undefined;
  /**
   * The mirror's own branches and tags, and the branch its HEAD names, as Berth last read or set
   * them (only Berth writes there, under the mutex): a warm fetch compares the server's refs with
   * these instead of asking git. Undefined: read them again (after a failure).
   */
  private refs: Map<string, string> | undefined;
  private head: string | undefined;

  constructor(
    readonly repoId: string,
    readonly url: string,
    root: string,
    private readonly deps: { readonly access: RemoteAccess; readonly mutex: KeyedMutex<string>; readonly probe?: MirrorProbe | undefined },
  ) {
    this.dir = path.join(root, `${repoId}.git`);
  }

  private get ctx(): RemoteContext {
    return { repoId: this.repoId, url: this.url };
  }

  /** Whether the mirror exists on disk (the background fetch keeps only those fresh). */
  async exists(): Promise<boolean> {
    return access(path.join(this.dir, "HEAD")).then(() => true, () => false);
  }

  /** Makes the bare repository, if it is not there yet (under the mutex: nothing else runs in it meanwhile). */
  private async createLocked(): Promise<void> {
    if (await this.exists()) return;
    await mkdir(path.dirname(this.dir), { recursive: true });
    // `git init` on a half-made directory (a crash during the last one) completes it.
    await execGit(path.dirname(this.dir), ["init", "--quiet", "--bare", "--template=", this.dir], LOCAL);
    for (const [k, v] of [["gc.auto", "0"], ["gc.pruneExpire", "never"], ["core.logAllRefUpdates", "false"]] as const) await execGit(this.dir, ["config", k, v], LOCAL);
  }

  /**
   * The server's refs brought into the mirror by a fetch that starts after this call (joined
   * with one queued behind the running fetch). UNAVAILABLE REMOTE_UNREACHABLE when the server
   * cannot be reached; the mirror then stays as it was.
   */
  fetch(): Promise<RemoteView> {
    if (this.queued) return this.queued;
    const queued: Promise<RemoteView> = this.deps.mutex.with(this.dir, async () => {
      // Started (this runs a turn after `queued` was set): later asks queue a fetch of their own.
      if (this.queued === queued) this.queued = undefined;
      return this.fetchLocked();
    });
    this.queued = queued;
    return queued;
  }

  private async fetchLocked(): Promise<RemoteView> {
    await this.createLocked();
    this.deps.probe?.gitStarted?.(this.repoId, "fetch");
    try {
      const ls = await remoteGit(this.dir, ["ls-remote", "--symref", this.url], this.deps.access, this.ctx, "fetch");
      if (ls.code !== 0) throw remoteFailure(this.ctx, "fetch", ls);
      const remote = parseLsRemote(ls.stdout.toString("utf8"));
      if (!sameRefs(remote.refs, this.refs ?? (await this.localRefs()))) {
        this.refs = undefined;
        const args = ["fetch", "--prune", "--no-tags", "--no-write-fetch-head", "--quiet", "--no-recurse-submodules", this.url, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];
        const r = await remoteGit(this.dir, args, this.deps.access, this.ctx, "fetch");
        if (r.code !== 0) throw remoteFailure(this.ctx, "fetch", r);
        await this.localRefs();
      }
      if (remote.head !== undefined && remote.head !== (this.head ?? (await this.headRef()))) {
        this.head = undefined;
        await execGit(this.dir, ["symbolic-ref", "HEAD", remote.head], LOCAL);
        this.head = remote.head;
      }
      return remote;
    } finally {
      this.deps.probe?.gitEnded?.(this.repoId, "fetch");
    }
  }

  /** refs/heads/* and refs/tags/* of the mirror (ref → object id), read from git and kept. */
  private async localRefs(): Promise<Map<string, string>> {
    const out = await execGit(this.dir, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags"], LOCAL);
    const refs = new Map<string, string>();
    for (const line of out.toString("utf8").split("\n")) {
      const sp = line.indexOf(" ");
      if (sp > 0) refs.set(line.slice(sp + 1), line.slice(0, sp));
    }
    this.refs = refs;
    return refs;
  }

  private async headRef(): Promise<string | undefined> {
    const r = await runGit(this.dir, ["symbolic-ref", "--quiet", "HEAD"], LOCAL);
    this.head = r.code === 0 ? r.stdout.toString("utf8").trim() : undefined;
    return this.head;
  }

  /** Whether `commit` (a full id) is a commit the mirror holds; no server asked. */
  async has(commit: string): Promise<boolean> {
    if (this.known.has(commit)) return true;
    if (!(await this.exists())) return false;
    const r = await runGit(this.dir, ["cat-file", "-e", `${commit}^{commit}`], LOCAL);
    if (r.code !== 0) return false;
    this.known.add(commit);
    return true;
  }

  /**
   * Makes sure the mirror holds `commit` (a full id recorded by some instance): read as it is
   * when it does, else fetched. BASE_COMMIT_GONE when the server does not have it either.
   */
  async ensure(commit: string): Promise<void> {
    if (await this.has(commit)) return;
    await this.fetch();
    if (await this.has(commit)) return;
    if (FULL_OID.test(commit)) {
      await this.fetchObject(commit);
      if (await this.has(commit)) return;
    }
    throw failedPrecondition("BASE_COMMIT_GONE", `commit ${commit} is neither in this instance's mirror of repository ${this.repoId} nor on its git server any more (was its history rewritten?)`, { repo_id: this.repoId, commit });
  }

  /**
   * A commit-ish (`main`, `HEAD`, a tag, an id) as a full id, against the server's refs now: a
   * full id the mirror holds needs no server; anything else is resolved after a fetch.
   */
  async resolve(commitish: string, field: string): Promise<string> {
    if (FULL_OID.test(commitish) && (await this.has(commitish))) return commitish;
    const remote = await this.fetch();
    // A branch (or HEAD) names what the server said it names: no git asked, once the mirror holds it.
    const named = branchOf(remote, commitish);
    if (named !== undefined && (await this.has(named))) return named;
    try {
      return await resolveCommit(this.dir, commitish, field);
    } catch (err) {
      if (!(err instanceof BerthError && err.violations[0]?.reason === "UNKNOWN_COMMIT" && FULL_OID.test(commitish))) throw err;
      await this.fetchObject(commitish);
      return resolveCommit(this.dir, commitish, field);
    }
  }

  /** A commit by id, for a server that does not advertise a ref naming it (quietly nothing when it does not have it). */
  private async fetchObject(commit: string): Promise<void> {
    await this.deps.mutex.with(this.dir, async () => {
      await this.createLocked();
      const r = await remoteGit(this.dir, ["fetch", "--no-tags", "--no-write-fetch-head", "--quiet", "--no-recurse-submodules", this.url, commit], this.deps.access, this.ctx, "fetch");
      // "not our ref" (git daemon, file://, http): the server has no such commit to give (BASE_COMMIT_GONE or UNKNOWN_COMMIT, the caller's to say).
      if (r.code === 0 || /not our ref|unadvertised object|couldn't find remote ref/i.test(r.stderr)) return;
      throw remoteFailure(this.ctx, "fetch", r);
    });
  }

  /**
   * Moves the server's refs: `git push --force-with-lease=<ref>:<expected>` for each (one push,
   * `--atomic` when there are several: all move or none). Then the mirror's refs follow what the
   * server accepted. A lease that did not hold answers which ref and where it is now (the mirror
   * fetched again); a push the server refused otherwise is REMOTE_REJECTED; a server out of
   * reach REMOTE_UNREACHABLE (a push may then have landed without Berth hearing it: the next
   * landing finds its commit there, docs/landing-work.md).
   */
  async push(updates: readonly RefUpdate[], ctx: { changesetId: string }): Promise<PushResult> {
    if (updates.length === 0) return { ok: true };
    return this.deps.mutex.with(this.dir, async () => {
      this.deps.probe?.gitStarted?.(this.repoId, "push");
      let r;
      try {
        const args = [
          "push",
          "--porcelain",
          "--no-verify",
          "--no-recurse-submodules",
          ...(updates.length > 1 ? ["--atomic"] : []),
          ...updates.map((u) => `--force-with-lease=${u.ref}:${u.expected ?? ""}`),
          this.url,
          ...updates.map((u) => `${u.next}:${u.ref}`),
        ];
        r = await remoteGit(this.dir, args, this.deps.access, this.ctx, "push");
      } finally {
        this.deps.probe?.gitEnded?.(this.repoId, "push");
      }
      const lines = parsePorcelain(r.stdout.toString("utf8"));
      const accepted = async () => {
        try {
          for (const u of updates) {
            await execGit(this.dir, ["update-ref", "-m", `berth: pushed for changeset ${ctx.changesetId}`, u.ref, u.next], LOCAL);
            this.refs?.set(u.ref, u.next);
          }
        } catch (err) {
          this.refs = undefined;
          throw err;
        }
        return { ok: true } as const;
      };
      if (r.code === 0) return accepted();
      this.refs = undefined;
      // Refused, or unheard: what the server's refs are now says which. A lease that failed on
      // our side ("stale info") or on the server's (a push landed after it advertised its refs:
      // the server's own compare-and-set failed, "atomic transaction failed" for the others)
      // left a ref elsewhere; a push that landed though git did not hear the answer left them
      // all where it asked.
      const now = await this.fetchLocked().then(() => this.localRefs(), () => undefined);
      if (now !== undefined) {
        if (updates.every((u) => now.get(u.ref) === u.next)) return accepted();
        const moved = updates.find((u) => now.get(u.ref) !== u.expected && now.get(u.ref) !== u.next);
        if (moved) return { ok: false, ref: moved.ref, expected: moved.expected, actual: now.get(moved.ref) };
      }
      // The ref the server itself refused ("!" and not the atomic push's echo of another ref's refusal).
      const refused = updates.find((u) => (lines.get(u.ref) ?? "").startsWith("!") && !/atomic push failed/.test(lines.get(u.ref) ?? ""));
      if (refused) {
        const said = lines.get(refused.ref) ?? "";
        const e = failedPrecondition("REMOTE_REJECTED", `the git server of repository ${this.repoId} refused the push of ${refused.ref}: ${said}`, {
          changeset_id: ctx.changesetId,
          target_ref: refused.ref,
          remote_message: said,
        });
        (e as { cause?: unknown }).cause = new Error(r.stderr.trim().slice(0, 2000));
        throw e;
      }
      throw remoteFailure(this.ctx, "push", r);
    });
  }
}

/**
 * The commit a plain branch name (`main`, `refs/heads/main`) or HEAD names on the server, as git
 * would resolve it there: undefined when a tag of that name exists (git prefers the tag), or when
 * it is anything else (a tag, `main~1`, an abbreviated id): rev-parse decides those.
 */
function branchOf(remote: RemoteView, commitish: string): string | undefined {
  if (commitish === "HEAD") return remote.head === undefined ? undefined : remote.refs.get(remote.head);
  if (commitish.startsWith("refs/heads/")) return remote.refs.get(commitish);
  if (!/^[A-Za-z0-9._/-]+$/.test(commitish) || remote.refs.has(`refs/tags/${commitish}`)) return undefined;
  return remote.refs.get(`refs/heads/${commitish}`);
}

/** `ls-remote --symref` output: the branch HEAD names, and every branch and tag (peeled `^{}` lines left out). */
export function parseLsRemote(out: string): { head: string | undefined; refs: Map<string, string> } {
  let head: string | undefined;
  const refs = new Map<string, string>();
  for (const line of out.split("\n")) {
    const tab = line.indexOf("\t");
    if (tab < 0) continue;
    const left = line.slice(0, tab);
    const name = line.slice(tab + 1);
    if (left.startsWith("ref: ")) {
      if (name === "HEAD") head = left.slice(5);
      continue;
    }
    if ((name.startsWith("refs/heads/") || name.startsWith("refs/tags/")) && !name.endsWith("^{}")) refs.set(name, left);
  }
  return { head: head?.startsWith("refs/heads/") ? head : undefined, refs };
}

function sameRefs(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/** `git push --porcelain`: destination ref → its line's flag and summary. */
function parsePorcelain(out: string): Map<string, string> {
  const lines = new Map<string, string>();
  for (const line of out.split("\n")) {
    const m = /^(.)\t([^\t]*):([^\t]*)\t(.*)$/.exec(line);
    if (m) lines.set(m[3]!, `${m[1]} ${m[4]}`);
  }
  return lines;
}
