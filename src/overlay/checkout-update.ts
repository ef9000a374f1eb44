/**
 * The work trees that have a merge's target branch checked out (the source repository's own,
 * and any linked worktree), brought along when MERGED moves the branch, as `git merge --ff-only`
 * there would: a ref moved under a checkout leaves its index and files at the old commit, and
 * `git status` there shows the merge undone (docs/landing-work.md, "The checked-out branch").
 *
 * - Before anything moves, every such checkout must be clean (index and tracked files as the
 *   target's commit has them; untracked files are the user's and stay): otherwise MERGED is
 *   refused with TARGET_CHECKED_OUT_DIRTY. Berth never decides what to do with someone's
 *   uncommitted work.
 * - Then, inside the transition's transaction, each checkout is moved from the old commit to the
 *   new one (`git read-tree -u -m <old> <new>`: git's own two-tree fast-forward, which refuses
 *   rather than overwrite a changed or untracked file), and only then the ref, by its
 *   compare-and-set. The checkout goes first because that is the crash that loses nothing: a
 *   crash after it leaves the merge's files in the checkout as uncommitted changes on the old
 *   commit, whereas a crash after a ref-first move would leave them looking reverted (the state
 *   a `git commit -a` there would make real). A compare-and-set that fails puts the checkouts
 *   back (`read-tree -u -m <new> <old>`).
 *
 * Git runs in the user's checkout with Berth's safe settings and every filter driver the
 * repository's config defines switched off (filterOverrides): a file a filter would smudge is
 * written as stored. No submodule is entered.
 */
import path from "node:path";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import { filterOverrides, runGit, type GitConfig, type GitResult } from "../platform/git.js";

const TIMEOUT_MS = 60_000;
const SMALL = 1 << 20;

/** What a refusal names: the changeset and the target. */
export interface CheckoutContext {
  readonly changesetId: string;
  readonly targetRef: string;
}

/** A work tree with the target checked out. */
export interface Checkout {
  readonly path: string;
  /** As an answer names it: relative to the source repository ("." for its own work tree); server paths are admins' only. */
  readonly shown: string;
  /** Its config's filter drivers switched off. */
  readonly config: GitConfig;
}

/**
 * The clean checkouts of `targetRef` (none for a bare repository without linked worktrees), or
 * TARGET_CHECKED_OUT_DIRTY naming the first one that is not.
 */
export async function cleanCheckoutsOf(source: string, ctx: CheckoutContext): Promise<Checkout[]> {
  const checkouts = await checkoutsOf(source, ctx.targetRef);
  for (const c of checkouts) {
    // The index against HEAD (the target) and the tracked files against the index, in git's own
    // words; untracked files are left out (read-tree refuses to overwrite one in the merge's way).
    const r = await git(c, ["status", "--porcelain=v1", "-z", "--untracked-files=no", "--ignore-submodules=dirty", "--no-renames"]);
    if (r.code !== 0) throw checkoutFailed(c, ["status"], r);
    const changed = r.stdout.toString("utf8").split("\0").filter((e) => e !== "").map((e) => e.slice(3));
    if (changed.length > 0) {
      throw dirty(c, ctx, `has uncommitted changes in ${changed.length} file(s): ${changed.slice(0, 10).join(", ")}${changed.length > 10 ? ", …" : ""}`);
    }
  }
  return checkouts;
}

/**
 * Moves the checkouts from `old` to `next`, then calls `move` (the ref's compare-and-set); false
 * when the target is no longer at `old` (a checkout's HEAD, or the compare-and-set, says so),
 * with every checkout as it was. TARGET_CHECKED_OUT_DIRTY when git refuses to update one (a file
 * changed since the check, or git busy there), those already moved put back.
 */
export async function moveWithCheckouts(checkouts: readonly Checkout[], old: string, next: string, move: () => Promise<boolean>, ctx: CheckoutContext): Promise<boolean> {
  for (const c of checkouts) if ((await headOf(c)) !== old) return false;
  const done: Checkout[] = [];
  try {
    for (const c of checkouts) {
      const r = await readTree(c, old, next);
      if (r.code !== 0) throw dirty(c, ctx, `could not be brought to the merge (${firstLine(r)})`);
      done.push(c);
    }
    if (await move()) return true;
  } catch (err) {
    await putBack(done, next, old);
    throw err;
  }
  await putBack(done, next, old);
  return false;
}

async function putBack(checkouts: readonly Checkout[], from: string, to: string): Promise<void> {
  for (const c of checkouts) {
    const r = await readTree(c, from, to);
    // Someone changed a file the merge brought in, in the instant since: their edit stays, and
    // the checkout holds the merge as uncommitted changes. Said, never guessed at.
    if (r.code !== 0) {
      throw new BerthError("unavailable", "GIT_FAILED", `the work tree ${c.shown} could not be put back after the merge was not recorded: it holds the merge's files as uncommitted changes (${firstLine(r)})`, {
        source_path: c.path,
        command: "read-tree",
        exit_code: String(r.code),
      });
    }
  }
}

function readTree(c: Checkout, from: string, to: string): Promise<GitResult> {
  return git(c, ["read-tree", "-u", "-m", "--no-recurse-submodules", from, to]);
}

async function headOf(c: Checkout): Promise<string | undefined> {
  const r = await git(c, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
  return r.code === 0 ? r.stdout.toString("utf8").trim() : undefined;
}

/** The work trees `git worktree list` says have `ref` checked out (a bare repository's own entry and vanished worktrees left out). */
async function checkoutsOf(source: string, ref: string): Promise<Checkout[]> {
  const r = await runGit(source, ["worktree", "list", "--porcelain", "-z"], { timeoutMs: TIMEOUT_MS, maxBuffer: SMALL });
  if (r.code !== 0) throw checkoutFailed({ path: source, shown: "." }, ["worktree"], r);
  const out: Checkout[] = [];
  for (const record of r.stdout.toString("utf8").split("\0\0")) {
    const lines = record.split("\0");
    const dir = lines.find((l) => l.startsWith("worktree "))?.slice("worktree ".length);
    if (dir === undefined || lines.includes("bare") || lines.some((l) => l === "prunable" || l.startsWith("prunable "))) continue;
    if (!lines.includes(`branch ${ref}`)) continue;
    out.push({ path: dir, shown: path.relative(source, dir) || ".", config: await filterOverrides(dir) });
  }
  return out;
}

function git(c: Checkout, args: readonly string[]): Promise<GitResult> {
  return runGit(c.path, args, { timeoutMs: TIMEOUT_MS, maxBuffer: 64 << 20, config: c.config });
}

function firstLine(r: GitResult): string {
  return r.stderr.trim().split("\n").find((l) => l.startsWith("error:") || l.startsWith("fatal:")) ?? r.stderr.trim().split("\n")[0] ?? "";
}

function dirty(c: Checkout, ctx: CheckoutContext, what: string): BerthError {
  const branch = ctx.targetRef.replace(/^refs\/heads\//, "");
  return failedPrecondition(
    "TARGET_CHECKED_OUT_DIRTY",
    `${branch} is checked out in the work tree ${c.shown} of the repository, which ${what}: nothing was merged. Commit or stash them there (or remove what is in the way), or name another target_ref`,
    { changeset_id: ctx.changesetId, target_ref: ctx.targetRef, worktree: c.shown },
  );
}

function checkoutFailed(c: Pick<Checkout, "path" | "shown">, args: readonly string[], r: GitResult): BerthError {
  return new BerthError("unavailable", "GIT_FAILED", `git ${args[0] ?? ""} failed in the work tree ${c.shown}: ${firstLine(r)}`, {
    source_path: c.path,
    command: args[0] ?? "",
    exit_code: String(r.code),
  });
}
