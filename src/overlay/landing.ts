/**
 * Landing (docs/landing-work.md): a changeset's overlay becomes a commit on a branch of its
 * registered repository (CommitChangeset), and that commit is merged into a target branch by the
 * MERGED transition. Git is driven with plumbing only (./landing-git.ts); the database says what
 * was recorded, git's refs say what was published, and the order between them is what makes a
 * crash harmless:
 *
 * - commit: one transaction holds the changeset row FOR UPDATE while it reads the overlay, writes
 *   the objects, moves the branch ref by compare-and-set and records commit_id. Every write of
 *   the overlay holds that row FOR SHARE (src/overlay/file-writes.ts), so the commit is exactly
 *   the overlay committed when the row was taken, and commits of one changeset take turns.
 *   Objects written by a transaction that then fails are unreferenced and harmless. A crash
 *   after the ref moved leaves the ref ahead of commit_id; the next commit of the same overlay
 *   writes the same commit and records it.
 * - merge: all of it runs in the transition's transaction, once its compare-and-set holds the
 *   changeset row: the overlay is read and committed as above, the merge computed, the target
 *   moved with a compare-and-set, and the transaction commits only when that succeeded. A crash
 *   after the target moved leaves the changeset APPROVED with its commit already in the target:
 *   MERGED again builds the same commit (same overlay, message and author), finds it there
 *   ("already merged") and only records the transition. A merge refused after the changeset's
 *   own ref moved (MERGE_CONFLICT, TARGET_MOVED) leaves that ref ahead of commit_id, as a crash
 *   would.
 *
 * The row is held across git's work (seconds for thousands of files): a write of the changeset's
 * overlay waits that long, and a write that waited for a MERGED finds the changeset terminal.
 * That is the price of merging exactly the overlay that was locked (docs/decisions.md).
 *
 * A repository on a git server lands the same way in this instance's mirror of it
 * (repository/mirror.ts), fetched first so that the target is the server's branch now. Instead
 * of a compare-and-set of a local ref, the refs move on the server by a push with a lease on what
 * the fetch read (`--force-with-lease=<ref>:<old>`); MERGED pushes the changeset's branch and
 * the target together (`--atomic`), after the transition's compare-and-set and before the
 * transaction commits, so the crash between the two is the one above: the next MERGED finds its
 * commit in the server's target. A lease that does not hold is TARGET_MOVED, and the transaction
 * rolls back with nothing changed in PostgreSQL.
 */
import { BerthError, failedPrecondition, invalidArgument } from "../platform/errors.js";
import type { Clock } from "../platform/clock.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { Changeset } from "../sessions/workspace.js";
import { assertCanTransition, assertNotTerminal, changesetFromRow, changesetNotFound, stateMismatch, type MoveOptions } from "../sessions/changesets.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { Change, Tx } from "../platform/unit-of-work.js";
import { changesetOverlay, findLandingChangeset, recordCommit, recordMergedInto, type LandingChangeset } from "./landing.repository.js";
import { cleanCheckoutsOf, moveWithCheckouts } from "./checkout-update.js";
import { defaultCommitMessage } from "./commit-message.js";
import { commitIdentity, compareAndSetRef, headBranch, planMerge, readRef, validRefName, writeCommit, type Identity, type PathChange } from "./landing-git.js";
import { RepositoryLocations } from "../repository/locations.js";
import type { Mirror, RefUpdate } from "../repository/mirror.js";
import { overlayContents, OverlayRowMoved, type OverlayFileRef } from "./overlay-stream.js";

/** A landing decided on rows that then moved is decided again this many times, then ABORTED OVERLAY_CHANGING. */
const BUILD_ATTEMPTS = 3;

/** Who commits: always Berth; the author is the agent (or whoever the request names). */
const COMMITTER = { name: "Berth", email: "berth@berth.invalid" } as const;

export interface LandingDeps {
  readonly registry: WorkspaceRegistry;
  readonly clock: Clock;
  /** BERTH_COMMIT_REF_PREFIX */
  readonly refPrefix: string;
  /**
   * Test seam: runs between reading the target and its compare-and-set update (test/landing
   * moves the target there to prove TARGET_MOVED). Never set in production.
   */
  readonly beforeTargetUpdate?: ((gitDir: string, targetRef: string) => Promise<void>) | undefined;
  /**
   * The messages of the commits the agents of these workspaces made in their environments, in
   * turn order (kept by EndTurn; the turns layer's, given here by transport/build.ts): the default
   * message goes on with them after the intents. Absent: intents only.
   */
  readonly agentMessages?: ((trx: Tx, workspaceIds: readonly string[]) => Promise<string[]>) | undefined;
  /**
   * The base tree as the overlay already holds it (git-base.ts, cached per commit): the modes a
   * commit keeps without an ls-tree of its own. Without it, writeCommit lists the base itself.
   */
  readonly baseTree?: ((gitDir: string, commit: string) => Promise<{ readonly executables: ReadonlySet<string> }>) | undefined;
}

/**
 * Where a changeset lands on this instance: the repository's source path, whose refs move in
 * place, or this instance's mirror of its git server, whose refs move on the server by a push.
 */
interface Place {
  /** Where the objects are written and the refs read. */
  readonly dir: string;
  /** The mirror, for a repository on a git server. */
  readonly mirror: Mirror | undefined;
}

export interface CommitInput {
  readonly changesetId: string;
  /** Empty: the intents of the changeset's sessions, then their agents' own commit messages (commit-message.ts). */
  readonly message: string;
  /** Undefined: the calling agent. */
  readonly author?: { readonly name: string; readonly email: string } | undefined;
  /** The caller, the default author. */
  readonly agentId: string;
}

export interface CommitResult {
  readonly changeset: Changeset;
  readonly commit: string;
  readonly ref: string;
  readonly tree: string;
  readonly paths: number;
  /** The ref already named this commit and it was recorded: nothing was written. */
  readonly unchanged: boolean;
}

export interface MergeOutcome {
  readonly targetRef: string;
  readonly oldCommit: string;
  readonly newCommit: string;
  readonly changesetCommit: string;
  readonly fastForward: boolean;
}

export class Landing {
  constructor(private readonly deps: LandingDeps) {}

  private get db() {
    return this.deps.registry.db;
  }

  /**
   * CommitChangeset: the changeset's combined overlay as one commit on its base, on <prefix><id>.
   * The overlay is read and the commit built inside the transaction holding the changeset row
   * FOR UPDATE: a write of the overlay holds that row FOR SHARE, so none commits between the read
   * and the record, and two commits of one changeset take turns, each building what is committed
   * when it holds the row (the later overlay always wins; the ref never moves back).
   */
  async commit(input: CommitInput): Promise<CommitResult> {
    const { changesetId } = input;
    const cs = await this.changeset(changesetId);
    assertNotTerminal(changesetId, cs.state);
    const place = await this.placeOf(cs);
    return this.deps.registry.uow.run(async (change) => {
      const locked = (await findLandingChangeset(change.trx, changesetId, "update"))!;
      assertNotTerminal(changesetId, locked.state);
      return this.commitLocked(change, locked, place, input);
    });
  }

  /**
   * The commit of the overlay as it is now, its ref moved and commit_id recorded, in `change`,
   * whose transaction holds the changeset row (FOR UPDATE, or the MERGED transition's
   * compare-and-set): no write of the overlay can commit until it ends. On a git server the ref
   * is pushed now, or, given `deferred`, left there for the caller to push with its own.
   */
  private async commitLocked(change: Change, locked: LandingChangeset, place: Place, input: CommitInput, deferred?: RefUpdate[]): Promise<CommitResult> {
    const { changesetId } = input;
    const source = place.dir;
    const ref = this.branchOf(changesetId);
    // Read while the commit builds: the changeset's lock keeps other commits of it off the ref,
    // and anyone else's move is caught by the compare-and-set below. A mirror's refs are read
    // after the build, which may fetch into it.
    const current = place.mirror === undefined ? readRef(source, ref) : undefined;
    current?.catch(() => {}); // awaited below unless the build fails first
    const built = await this.build(change.trx, locked, place, input);
    const old = await (current ?? readRef(source, ref));
    if (old === built.commit && locked.commit_id === built.commit) {
      return { changeset: changesetFromRow(locked), commit: built.commit, ref, tree: built.tree, paths: built.paths, unchanged: true };
    }
    if (old !== built.commit && place.mirror !== undefined) {
      const update = { ref, next: built.commit, expected: old };
      if (deferred) deferred.push(update);
      else {
        const pushed = await place.mirror.push([update], { changesetId });
        if (!pushed.ok) throw targetMoved(changesetId, ref, pushed.expected, pushed.actual);
      }
    } else if (old !== built.commit && !(await compareAndSetRef(source, ref, built.commit, old, `berth: commit changeset ${changesetId}`))) {
      throw targetMoved(changesetId, ref, old, await readRef(source, ref));
    }
    const now = this.deps.clock.now();
    const row = await recordCommit(change.trx, changesetId, built.commit, new Date(now));
    change.record({
      kind: "changeset.committed",
      repoId: row.repo_id,
      changesetId,
      agentId: input.agentId,
      occurredAt: now,
      payload: { case: "changesetCommitted", value: { commitId: built.commit, ref, paths: built.paths, baseCommit: built.base } },
    });
    return { changeset: changesetFromRow(row), commit: built.commit, ref, tree: built.tree, paths: built.paths, unchanged: false };
  }

  /** The branch CommitChangeset writes the changeset's commit on (a full ref). */
  branchOf(changesetId: string): string {
    return `${this.deps.refPrefix}${changesetId}`;
  }

  /**
   * The MERGED transition: the changeset committed (again: the current overlay, with the message
   * and author of its last commit), merged into `targetRef` (empty: the branch HEAD names), the
   * target moved by compare-and-set inside the transition's transaction. A repository without
   * a source_path or a remote_url only changes state (a target_ref for it is NO_SOURCE_REPOSITORY).
   * On a git server the changeset's branch and the target are pushed together (`--atomic`).
   * `guard`: the caller's rule asked again once the transition holds the row (MoveOptions.guard).
   */
  async merge(changesetId: string, targetRef: string, reason: string, agentId: string, expected?: ChangesetStateName, who?: string, guard?: MoveOptions["guard"]): Promise<{ changeset: Changeset; merge?: MergeOutcome; unchanged: boolean }> {
    const cs = await this.changeset(changesetId);
    if (expected !== undefined) {
      // A retried MERGED that succeeded: answered as it is (the merge is not done twice).
      if (cs.state === "merged" && expected !== "merged") return { changeset: changesetFromRow(cs), unchanged: true };
      if (cs.state !== expected) throw stateMismatch(changesetId, expected, cs.state);
    }
    assertCanTransition(changesetId, cs.state, "merged");
    // No git repository behind it: there is nothing to merge into, and MERGED stays the state it was.
    if (!RepositoryLocations.hasGit(await this.deps.registry.repository(cs.repo_id))) {
      if (targetRef !== "") await this.placeOf(cs);
      return this.deps.registry.moveChangeset(changesetId, "merged", reason, { expected, who, guard });
    }
    // On a git server: fetched now, so that the target is the server's branch as it is.
    const place = await this.placeOf(cs);
    const source = place.dir;
    const target = await this.target(source, targetRef, changesetId);
    let merge: MergeOutcome | undefined;
    // Everything from the overlay's read to the target's move runs once the transition's
    // compare-and-set holds the changeset row: a write that committed before is in the commit,
    // one that waited for the row finds the changeset MERGED and is refused (CHANGESET_TERMINAL).
    const moved = await this.deps.registry.moveChangeset(changesetId, "merged", reason, { expected, who, guard, during: async (change) => {
      const locked = (await findLandingChangeset(change.trx, changesetId))!;
      const pending: RefUpdate[] = [];
      const changesetCommit = await this.commitForMerge(change, locked, place, agentId, pending);
      const old = await readRef(source, target);
      if (old === undefined) {
        throw failedPrecondition("TARGET_NOT_FOUND", `the target ${target} does not exist in the repository`, { changeset_id: changesetId, target_ref: target });
      }
      const at = Math.floor(this.deps.clock.now() / 1000);
      const message = `Merge changeset ${changesetId} into ${target.replace(/^refs\/heads\//, "")}\n`;
      const plan = await planMerge(source, old, changesetCommit, message, { ...COMMITTER, at });
      if (plan.kind === "conflict") {
        throw failedPrecondition("MERGE_CONFLICT", `changeset ${changesetId} conflicts with ${target} in ${plan.paths.length} path(s): ${plan.paths.join(", ")}`, {
          changeset_id: changesetId,
          target_ref: target,
          target_commit: old,
          changeset_commit: changesetCommit,
          paths: JSON.stringify(plan.paths),
        });
      }
      merge = { targetRef: target, oldCommit: old, newCommit: plan.commit, changesetCommit, fastForward: plan.kind === "fast_forward" };
      if (place.mirror !== undefined) {
        // The changeset's branch (when its commit is new) and the target, both leased, all or nothing.
        if (plan.commit !== old) await this.deps.beforeTargetUpdate?.(source, target);
        const updates = plan.commit !== old ? [...pending, { ref: target, next: plan.commit, expected: old }] : pending;
        const pushed = await place.mirror.push(updates, { changesetId });
        if (!pushed.ok) throw targetMoved(changesetId, pushed.ref, pushed.expected, pushed.actual);
      } else if (plan.commit !== old) {
        const checkouts = await cleanCheckoutsOf(source, { changesetId, targetRef: target });
        await this.deps.beforeTargetUpdate?.(source, target);
        const cas = () => compareAndSetRef(source, target, plan.commit, old, `berth: merge changeset ${changesetId}`);
        if (!(await moveWithCheckouts(checkouts, old, plan.commit, cas, { changesetId, targetRef: target }))) {
          throw targetMoved(changesetId, target, old, await readRef(source, target));
        }
      }
      change.record({
        kind: "changeset.merged",
        repoId: cs.repo_id,
        changesetId,
        agentId,
        occurredAt: this.deps.clock.now(),
        reason,
        payload: { case: "changesetMerged", value: { targetRef: target, oldCommitId: old, newCommitId: plan.commit, changesetCommitId: changesetCommit, fastForward: merge.fastForward } },
      });
      await recordMergedInto(change.trx, changesetId, target);
    } });
    if (moved.unchanged || merge === undefined) return moved;
    return { changeset: { ...moved.changeset, commitId: merge.changesetCommit }, merge, unchanged: false };
  }

  /**
   * The commit to merge, in the transition's transaction: the current overlay's, or the one
   * recorded when no live session holds an overlay any more.
   */
  private async commitForMerge(change: Change, locked: LandingChangeset, place: Place, agentId: string, deferred?: RefUpdate[]): Promise<string> {
    // Written by another instance: its commit is on the server's changeset branch (fetched), or fetched by id here.
    if (place.mirror !== undefined && locked.commit_id) await place.mirror.ensure(locked.commit_id).catch(() => undefined);
    const prior = locked.commit_id ? await commitIdentity(place.dir, locked.commit_id) : undefined;
    try {
      const r = await this.commitLocked(change, locked, place, { changesetId: locked.id, message: prior?.message ?? "", author: prior, agentId }, deferred);
      return r.commit;
    } catch (err) {
      if (locked.commit_id && err instanceof BerthError && err.reason === "NOTHING_TO_COMMIT") return locked.commit_id;
      throw err;
    }
  }

  /**
   * The commit a check on VERIFYING runs on (src/verification/): built as MERGED builds it (the
   * current overlay, with the message and author of the changeset's last commit, so the merge
   * later finds the same commit), or the recorded commit when no live session holds an overlay
   * any more. With the git directory holding it on this instance. `agentId`: the author when the
   * changeset was never committed.
   */
  async commitForCheck(changesetId: string, agentId: string): Promise<{ commit: string; gitDir: string }> {
    const cs = await this.changeset(changesetId);
    assertNotTerminal(changesetId, cs.state);
    const place = await this.placeOf(cs);
    const commit = await this.deps.registry.uow.run(async (change) => {
      const locked = (await findLandingChangeset(change.trx, changesetId, "update"))!;
      assertNotTerminal(changesetId, locked.state);
      return this.commitForMerge(change, locked, place, agentId);
    });
    return { commit, gitDir: place.dir };
  }

  private async changeset(changesetId: string): Promise<LandingChangeset> {
    const cs = await findLandingChangeset(this.db, changesetId);
    if (!cs) throw changesetNotFound(changesetId);
    return cs;
  }

  /** Where the changeset lands on this instance; a mirror is fetched first (REMOTE_UNREACHABLE when the server is out of reach). */
  private async placeOf(cs: LandingChangeset): Promise<Place> {
    const repo = await this.deps.registry.repository(cs.repo_id);
    if (repo.sourcePath) return { dir: repo.sourcePath, mirror: undefined };
    const mirror = this.deps.registry.locations.mirror(repo);
    if (mirror === undefined) {
      throw failedPrecondition("NO_SOURCE_REPOSITORY", `repository ${repo.name} was registered without a source_path or a remote_url: there is no git repository to commit into`, {
        changeset_id: cs.id,
        repo_id: repo.id,
      });
    }
    await mirror.fetch();
    return { dir: mirror.dir, mirror };
  }

  /**
   * The full ref to merge into: refs/heads/<name> for a bare name; by default the branch HEAD
   * names, held to the same rules (a HEAD on a changeset's own branch is no default target).
   */
  private async target(source: string, raw: string, changesetId: string): Promise<string> {
    if (raw === "") {
      const head = await headBranch(source);
      if (head === undefined || !(await this.branchToMergeInto(source, head))) {
        const what = head === undefined ? "is detached" : `names ${head}, which is not a branch to merge into (refs/heads/<name>, not under ${this.deps.refPrefix})`;
        throw failedPrecondition("NO_DEFAULT_BRANCH", `the repository's HEAD ${what}: name the target_ref to merge into`, { changeset_id: changesetId, source_head: head ?? "detached" });
      }
      return head;
    }
    const ref = raw.startsWith("refs/") ? raw : `refs/heads/${raw}`;
    if (!(await this.branchToMergeInto(source, ref))) {
      throw invalidArgument([{ field: "target_ref", reason: "INVALID_FORMAT", description: `${raw} is not a branch to merge into (refs/heads/<name>, not under ${this.deps.refPrefix})` }]);
    }
    return ref;
  }

  /** A branch, not one of Berth's changeset branches, and a name git accepts. */
  private async branchToMergeInto(source: string, ref: string): Promise<boolean> {
    return ref.startsWith("refs/heads/") && !ref.startsWith(this.deps.refPrefix) && (await validRefName(source, ref));
  }

  /**
   * The commit's inputs: every live session's overlay combined (one version per path, or
   * OVERLAY_CONFLICT naming each path the sessions disagree on), their one base commit
   * (BASE_MISMATCH otherwise), and a date that is the overlay's (its last change), so that the
   * same overlay, message and author give the same commit id. Decided on the rows' metadata;
   * the contents then stream from PostgreSQL into git (overlay-stream.ts). A row that moved
   * between the two (a session ended: its rows are deleted without the changeset's lock) is
   * decided again, up to BUILD_ATTEMPTS times.
   */
  private async build(trx: Tx, cs: LandingChangeset, place: Place, input: CommitInput) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.buildOnce(trx, cs, place, input);
      } catch (err) {
        if (!(err instanceof OverlayRowMoved)) throw err;
        if (attempt < BUILD_ATTEMPTS) continue;
        throw new BerthError("aborted", "OVERLAY_CHANGING", `the overlay of changeset ${cs.id} kept changing while it was committed; retry`, { changeset_id: cs.id });
      }
    }
  }

  private async buildOnce(trx: Tx, cs: LandingChangeset, place: Place, input: CommitInput) {
    const { sessions, rows } = await changesetOverlay(trx, cs.id);
    if (rows.length === 0) {
      throw failedPrecondition("NOTHING_TO_COMMIT", `changeset ${cs.id} has no change in any live session`, { changeset_id: cs.id });
    }
    const working = new Set(rows.map((r) => r.workspace_id));
    const contributing = sessions.filter((s) => working.has(s.workspace_id));
    const bases = new Set(contributing.map((s) => s.base_commit));
    if (bases.size > 1) {
      throw failedPrecondition("BASE_MISMATCH", `the sessions of changeset ${cs.id} work on different base commits: rebase them onto one first`, {
        changeset_id: cs.id,
        bases: JSON.stringify(Object.fromEntries(contributing.map((s) => [s.session_id, s.base_commit]))),
      });
    }
    const base = [...bases][0]!;
    const sessionOf = new Map(sessions.map((s) => [s.workspace_id, s.session_id]));
    const byPath = new Map<string, typeof rows>();
    for (const r of rows) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
    const deleted: string[] = [];
    const written: OverlayFileRef[] = [];
    const conflicts: Record<string, string[]> = {};
    let last = 0;
    let bytes = 0;
    for (const [p, versions] of byPath) {
      const kinds = new Set(versions.map((v) => (v.sha256 === null ? "deleted" : v.sha256)));
      if (kinds.size > 1) {
        conflicts[p] = versions.map((v) => sessionOf.get(v.workspace_id) ?? v.workspace_id);
        continue;
      }
      for (const v of versions) last = Math.max(last, v.updated_at.getTime());
      const first = versions[0]!;
      if (first.sha256 === null) deleted.push(p);
      else {
        written.push({ workspaceId: first.workspace_id, path: p, sha256: first.sha256, size: first.size ?? 0 });
        bytes += first.size ?? 0;
      }
    }
    const conflicting = Object.keys(conflicts);
    if (conflicting.length > 0) {
      throw failedPrecondition("OVERLAY_CONFLICT", `the sessions of changeset ${cs.id} hold different versions of ${conflicting.length} path(s): ${conflicting.join(", ")}`, {
        changeset_id: cs.id,
        paths: JSON.stringify(conflicting),
        sessions: JSON.stringify(conflicts),
      });
    }
    const message = normaliseMessage(input.message || defaultCommitMessage(cs.id, contributing.map((s) => s.intent), (await this.deps.agentMessages?.(trx, contributing.map((s) => s.workspace_id))) ?? []));
    const at = Math.floor(last / 1000);
    const author: Identity = { name: input.author?.name || input.agentId, email: input.author?.email || `${input.agentId}@berth.invalid`, at };
    // The base is in a source path; a mirror may need it fetched (BASE_COMMIT_GONE when the server dropped it).
    if (place.mirror !== undefined) await place.mirror.ensure(base);
    const executables = (await this.deps.baseTree?.(place.dir, base))?.executables;
    const commit = await writeCommit(place.dir, base, changesOf(trx, deleted, written), message, author, { ...COMMITTER, at }, { bytes, ...(executables ? { executables } : {}) });
    return { ...commit, base, paths: deleted.length + written.length };
  }
}

/** The commit's changes in the order fast-import must apply them: deletions first (a file may take a deleted directory's place), then the contents as PostgreSQL answers them. */
async function* changesOf(trx: Tx, deleted: readonly string[], written: readonly OverlayFileRef[]): AsyncGenerator<PathChange> {
  for (const path of deleted) yield { path, content: null };
  for await (const { ref, content } of overlayContents(trx, written)) yield { path: ref.path, content };
}

/** One trailing newline, as git itself stores a message: the same words give the same commit. */
function normaliseMessage(m: string): string {
  return `${m.replace(/\s+$/, "")}\n`;
}

function targetMoved(changesetId: string, ref: string, expected: string | undefined, actual: string | undefined) {
  return failedPrecondition("TARGET_MOVED", `${ref} moved while Berth was updating it (expected ${expected ?? "no ref"}, found ${actual ?? "no ref"}); nothing changed: try again`, {
    changeset_id: changesetId,
    target_ref: ref,
    expected_commit: expected ?? "",
    actual_commit: actual ?? "",
  });
}

