/**
 * The git plumbing of landing (docs/landing-work.md): a commit built from a base commit and a
 * set of path changes, a merge of two commits, and a compare-and-set ref update. Nothing here
 * touches a working tree or the repository's own index: the commit is built by fast-import in a
 * repository of Berth's own over the source's object store, so a source repository someone works
 * in is left exactly as it is (objects added, and the refs Berth moves on purpose).
 */
import { BerthError } from "../platform/errors.js";
import { runGit, withObjectStoreOf, type GitResult, type GitRunOptions } from "../platform/git.js";
import { committed, FAST_IMPORT_ARGS, FAST_IMPORT_CONFIG, FastImportStream, type Identity } from "./fast-import.js";

export type { Identity } from "./fast-import.js";

const TIMEOUT_MS = 30_000;
/** fast-import's guard: this much, and STREAM_MS_PER_MIB more per MiB the caller says it will write. */
const STREAM_TIMEOUT_MS = 60_000;
const STREAM_MS_PER_MIB = 1_000;
/** The ref fast-import's commit is made on, in the repository of Berth's own it runs in. */
const LAND_REF = "refs/heads/berth-land";
const SMALL = 1 << 20;
const ZERO_OID = "0000000000000000000000000000000000000000";

/** One path of the commit: its new content, or null for a deletion. */
export interface PathChange {
  readonly path: string;
  readonly content: Uint8Array | null;
}

async function git(repo: string, args: readonly string[], options: Partial<GitRunOptions> = {}): Promise<GitResult> {
  return runGit(repo, args, { timeoutMs: TIMEOUT_MS, maxBuffer: SMALL, ...options });
}

/** git's answer when it must succeed; anything else is the repository failing Berth (UNAVAILABLE). */
async function gitOk(repo: string, args: readonly string[], options: Partial<GitRunOptions> = {}): Promise<string> {
  const r = await git(repo, args, options);
  if (r.code !== 0) throw gitFailed(repo, args, r);
  return r.stdout.toString("utf8").trim();
}

function gitFailed(repo: string, args: readonly string[], r: GitResult): BerthError {
  return new BerthError("unavailable", "GIT_FAILED", `git ${args[0] ?? ""} failed in the repository: ${r.stderr.trim().split("\n")[0] ?? ""}`, {
    source_path: repo,
    command: args[0] ?? "",
    exit_code: String(r.code),
  });
}

function identityEnv(prefix: "AUTHOR" | "COMMITTER", who: Identity): Record<string, string> {
  return { [`GIT_${prefix}_NAME`]: who.name, [`GIT_${prefix}_EMAIL`]: who.email, [`GIT_${prefix}_DATE`]: `@${who.at} +0000` };
}

/** The commit a ref names now, undefined when the ref does not exist. */
export async function readRef(repo: string, ref: string): Promise<string | undefined> {
  const r = await git(repo, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
  if (r.code === 0) return r.stdout.toString("utf8").trim();
  if (r.code === 1) return undefined;
  throw gitFailed(repo, ["rev-parse"], r);
}

/** The branch HEAD names (refs/heads/…), undefined for a detached HEAD. */
export async function headBranch(repo: string): Promise<string | undefined> {
  const r = await git(repo, ["symbolic-ref", "--quiet", "HEAD"]);
  if (r.code === 0) return r.stdout.toString("utf8").trim();
  if (r.code === 1) return undefined;
  throw gitFailed(repo, ["symbolic-ref"], r);
}

/** Whether git accepts `ref` as a full ref name. */
export async function validRefName(repo: string, ref: string): Promise<boolean> {
  return (await git(repo, ["check-ref-format", ref])).code === 0;
}

/**
 * Writes the tree of `base` with `changes` applied and a commit of it with parent `base`, in
 * one `git fast-import` (fast-import.ts) run in a repository of Berth's own over the source's
 * object store (withObjectStoreOf): the blobs, the trees and the commit go into the source's
 * objects, the ref fast-import leaves goes with the temporary repository. `changes` may be an
 * async iterable: each file goes to git as it comes (the caller streams them from PostgreSQL),
 * so nothing holds all of them. They are applied in the order given (a deletion of a directory's
 * files before a file written in its place). A changed file keeps its mode in the base (an
 * executable stays executable: `executables`, when the caller knows the base's, else one
 * ls-tree); a new one is a regular file. The same inputs give the same commit id (git objects
 * are content-addressed; identities cut as commit-tree cuts them). Processes: one fast-import
 * (which answers the commit and tree ids itself), the repository's set-up, and the ls-tree when
 * `executables` is not given — whatever the number of files.
 */
export async function writeCommit(
  repo: string,
  base: string,
  changes: Iterable<PathChange> | AsyncIterable<PathChange>,
  message: string,
  author: Identity,
  committer: Identity,
  options: { readonly bytes?: number; readonly executables?: ReadonlySet<string> } = {},
): Promise<{ commit: string; tree: string }> {
  const executables = options.executables ? Promise.resolve(options.executables) : executablesOf(repo, base);
  executables.catch(() => {}); // awaited in the feed; a failure there is the call's
  // A hang guard, not a budget: the stream's pace is PostgreSQL's and git's.
  const timeoutMs = STREAM_TIMEOUT_MS + Math.ceil((options.bytes ?? 0) / (1 << 20)) * STREAM_MS_PER_MIB;
  return withObjectStoreOf(repo, async (run) => {
    const r = await run(FAST_IMPORT_ARGS, {
      timeoutMs,
      maxBuffer: SMALL,
      config: FAST_IMPORT_CONFIG,
      feed: async (sink) => {
        const exec = await executables;
        const fi = new FastImportStream(sink);
        await fi.commit({ ref: LAND_REF, mark: 1, author, committer, message, from: base });
        for await (const c of changes) {
          if (c.content === null) await fi.remove(c.path);
          else await fi.put(exec.has(c.path) ? "100755" : "100644", c.path, c.content);
        }
        await fi.report(1);
        await fi.done();
      },
    }).catch((err: unknown) => {
      if (err instanceof BerthError) throw err;
      const e = err as { code?: unknown; stderr?: unknown };
      // Not git's answer (the feed failed: the overlay's read, for one) is the caller's to see as it is.
      if (typeof e.code !== "number" && e.stderr === undefined) throw err;
      throw gitFailed(repo, ["fast-import"], { code: typeof e.code === "number" ? e.code : -1, stdout: Buffer.alloc(0), stderr: String(e.stderr ?? "") });
    });
    if (r.code !== 0) throw gitFailed(repo, ["fast-import"], r);
    return committed(r.stdout);
  });
}

/** The paths of `base` whose mode is 100755 (a rewritten file keeps the bit). */
async function executablesOf(repo: string, base: string): Promise<Set<string>> {
  const out = await git(repo, ["ls-tree", "-r", "-z", "--full-tree", base], { maxBuffer: 256 << 20 });
  if (out.code !== 0) throw gitFailed(repo, ["ls-tree"], out);
  const exec = new Set<string>();
  for (const entry of out.stdout.toString("utf8").split("\0")) {
    const tab = entry.indexOf("\t");
    if (tab > 0 && entry.startsWith("100755 ")) exec.add(entry.slice(tab + 1));
  }
  return exec;
}

/** The author and message of a commit (to write the same commit again on a changed overlay). */
export async function commitIdentity(repo: string, commit: string): Promise<{ name: string; email: string; message: string } | undefined> {
  const r = await git(repo, ["show", "-s", "--no-notes", "--format=%an%x00%ae%x00%B", commit]);
  if (r.code !== 0) return undefined;
  const [name = "", email = "", ...rest] = r.stdout.toString("utf8").split("\0");
  return { name, email, message: rest.join("\0").replace(/\n+$/, "\n") };
}

export async function isAncestor(repo: string, ancestor: string, of: string): Promise<boolean> {
  const r = await git(repo, ["merge-base", "--is-ancestor", ancestor, of]);
  if (r.code === 0) return true;
  if (r.code === 1) return false;
  throw gitFailed(repo, ["merge-base"], r);
}

export type MergePlan =
  | { readonly kind: "already_merged"; readonly commit: string }
  | { readonly kind: "fast_forward"; readonly commit: string }
  | { readonly kind: "merge"; readonly commit: string }
  | { readonly kind: "conflict"; readonly paths: readonly string[] };

/**
 * What merging `commit` into `target` gives, written as objects but on no ref: the target
 * itself when it already holds the commit, the commit when the target is its ancestor, else a
 * merge commit (parents target, commit) of `git merge-tree --write-tree`'s tree — or the
 * conflicting paths, with nothing written that anything names. The merge runs in a repository
 * of Berth's own over the source's objects (withObjectStoreOf): git's built-in merge, whatever
 * drivers, filters or attributes the source's config names (docs/security.md).
 */
export async function planMerge(repo: string, target: string, commit: string, message: string, committer: Identity): Promise<MergePlan> {
  if (await isAncestor(repo, commit, target)) return { kind: "already_merged", commit: target };
  if (await isAncestor(repo, target, commit)) return { kind: "fast_forward", commit };
  const args = ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", target, commit];
  const r = await withObjectStoreOf(repo, (run) => run(args, { timeoutMs: TIMEOUT_MS, maxBuffer: 64 << 20 })).catch((err: unknown) => {
    // Setting up the repository of Berth's own failed (the source unreadable, the disk full): as any other git of landing.
    if (err instanceof BerthError) throw err;
    const e = err as { code?: unknown; stderr?: unknown };
    throw gitFailed(repo, ["merge-tree"], { code: typeof e.code === "number" ? e.code : -1, stdout: Buffer.alloc(0), stderr: String(e.stderr ?? (err as Error).message ?? "") });
  });
  if (r.code !== 0 && r.code !== 1) throw gitFailed(repo, ["merge-tree"], r);
  const [tree = "", ...rest] = r.stdout.toString("utf8").split("\0");
  if (r.code === 1) return { kind: "conflict", paths: [...new Set(rest.filter((p) => p !== ""))].sort() };
  const merged = await gitOk(repo, ["commit-tree", tree, "-p", target, "-p", commit, "-F", "-"], {
    env: { ...identityEnv("AUTHOR", committer), ...identityEnv("COMMITTER", committer) },
    input: Buffer.from(message, "utf8"),
  });
  return { kind: "merge", commit: merged };
}

/**
 * `git update-ref <ref> <next> <expected>`: moves the ref only if it still names `expected`
 * (undefined: only if it does not exist). False when it did not (someone moved it); git's lock
 * on the ref makes the check and the move one step.
 */
export async function compareAndSetRef(repo: string, ref: string, next: string, expected: string | undefined, why: string): Promise<boolean> {
  const r = await git(repo, ["update-ref", "-m", why, ref, next, expected ?? ZERO_OID]);
  if (r.code === 0) return true;
  const now = await readRef(repo, ref);
  // Already there: this same update made by an earlier attempt of the caller's transaction.
  if (now === next) return true;
  if (now !== expected) return false;
  throw gitFailed(repo, ["update-ref"], r);
}
