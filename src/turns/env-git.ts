/**
 * Environments as git checkouts (docs/turns.md, "Environments"): each is a repository of its own
 * whose object store borrows the registered repository's (objects/info/alternates), checked out
 * at the base commit on `berth/<changeset_id>`, the overlay applied as uncommitted changes. The
 * source repository is only read: no clone bookkeeping, no worktree admin files, no refs are
 * written into its .git (docs/decisions.md). Capture asks git what differs (the index's stat
 * cache, .gitignore natively) instead of walking the tree.
 *
 * The environment's .git is Berth's, but the agent can run git there and change its config: every
 * call here carries the fixed safe settings (platform/git.ts), the filter drivers the
 * environment's config defines switched off, and `--git-dir`/`--work-tree` named explicitly.
 */
import { lstat, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { enclosingWorkTree, execGit, filterOverrides, type GitConfig } from "../platform/git.js";
import { failedPrecondition } from "../platform/errors.js";
import { lstatIfPresent } from "./safe-fs.js";

const RUN = { timeoutMs: 120_000, maxBuffer: 256 << 20 } as const;

/** The branch an environment is on: named after the changeset, as the landed commit's ref will be. */
export function branchOf(changesetId: string): string {
  return `berth/${changesetId}`;
}

const objectDirs = new Map<string, Promise<string>>();

/** The source repository's object directory (a worktree's or a bare repository's too: the common dir's). */
function objectsOf(sourcePath: string): Promise<string> {
  let p = objectDirs.get(sourcePath);
  if (!p) {
    p = execGit(sourcePath, ["rev-parse", "--path-format=absolute", "--git-common-dir"], RUN).then((out) => path.join(out.toString("utf8").trim(), "objects"));
    objectDirs.set(sourcePath, p);
    p.catch(() => objectDirs.delete(sourcePath));
  }
  return p;
}

/**
 * Makes `dir` (existing, empty) a checkout of `commit`: `git init` without templates (no sample
 * hooks), the source's objects as alternates, `marker` excluded (.git/info/exclude: `git status`
 * never shows it), then a detached checkout, which writes the files and an index with their stat
 * data. A fresh repository's config defines no filter driver, so a committed .gitattributes
 * naming one runs nothing.
 */
export async function checkoutBase(sourcePath: string, commit: string, dir: string, marker: string): Promise<void> {
  const objects = await objectsOf(sourcePath);
  await execGit(dir, ["init", "--quiet", "--template="], { ...RUN, config: [["init.defaultBranch", "berth-base"]] });
  const git = path.join(dir, ".git");
  await mkdir(path.join(git, "objects", "info"), { recursive: true });
  await mkdir(path.join(git, "info"), { recursive: true });
  await Promise.all([writeFile(path.join(git, "objects", "info", "alternates"), `${objects}\n`), writeFile(path.join(git, "info", "exclude"), `/${marker}\n`)]);
  await execGit(dir, ["checkout", "--quiet", "--detach", commit], RUN);
}

/** A branch name that is one plain loose ref file (what a changeset id gives): written without git. */
const PLAIN_BRANCH = /^berth\/[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * Puts the (detached, base-commit) checkout on its branch: HEAD and one ref, no file of the work
 * tree touched. For a plain name the two files are written as git writes them (a loose ref, a
 * symbolic HEAD): a git spawn is most of what a cold acquire from a spare costs on a loaded
 * machine. Anything else goes through `git checkout -b`, which validates the name.
 */
export async function nameBranch(dir: string, branch: string, commit: string): Promise<void> {
  if (!PLAIN_BRANCH.test(branch) || branch.endsWith(".lock")) {
    await execGit(dir, ["checkout", "--quiet", "-b", branch], RUN);
    return;
  }
  const git = path.join(dir, ".git");
  await mkdir(path.join(git, "refs", "heads", "berth"), { recursive: true });
  await writeFile(path.join(git, "refs", "heads", branch), `${commit}\n`);
  await writeFile(path.join(git, "HEAD"), `ref: refs/heads/${branch}\n`);
}

/** What git says differs in an environment. */
export interface GitChanges {
  /** Tracked paths whose work-tree file differs from the index or the index from HEAD, and every path differing from the base commit. */
  readonly changed: readonly string[];
  /** Untracked paths not ignored (a nested repository as `dir/`). */
  readonly untracked: readonly string[];
  /** Ignored paths (.gitignore, .git/info/exclude), a matching directory once as `dir/`. */
  readonly ignored: readonly string[];
}

/** The files of Berth's .git in an environment that git reads on every status (the agent can replace any of them). */
const GIT_READS = [".git/config", ".git/HEAD", ".git/index", ".git/commondir", ".git/packed-refs", ".git/info/exclude", ".git/info/attributes", ".git/objects/info/alternates"];

/**
 * The first file git would open during gitChanges that could hang it or make it read a lot: one
 * of GIT_READS, or a `.gitignore` / `.gitattributes` at the top or in one of `dirs` (the
 * directories the base and the manifest know), that is there and is not a regular file (git
 * opens a FIFO and blocks, with no timeout of its own), or a rule file over `maxRuleBytes`.
 * Undefined when there is none. One lstat each, nothing opened. A new directory's files are not
 * asked (that would be a walk): there, gitChanges' timeout is the guard.
 */
export async function gitCannotRead(dir: string, dirs: Iterable<string>, maxRuleBytes: number): Promise<string | undefined> {
  const checks: [string, number][] = GIT_READS.map((p) => [p, p === ".git/info/exclude" || p === ".git/info/attributes" ? maxRuleBytes : Infinity]);
  for (const d of ["", ...dirs]) for (const name of [".gitignore", ".gitattributes"]) checks.push([d ? `${d}/${name}` : name, maxRuleBytes]);
  const bad = await Promise.all(
    checks.map(async ([rel, max]) => {
      const st = await lstatIfPresent(path.join(dir, rel));
      return st && (!st.isFile() || st.size > max) ? rel : undefined;
    }),
  );
  return bad.find((r) => r !== undefined);
}

/**
 * `git status` (against the index and HEAD, untracked and ignored files) and `git diff
 * --name-only <base>` (the work tree against the base commit: an agent that committed in its
 * environment moved HEAD, not the base). Undefined when the environment's .git is not a
 * directory (a sourceless environment, or the agent removed or replaced it): the caller walks.
 *
 * Status may refresh the index (optional locks on): the index is Berth's, and its stat cache is
 * what keeps the next capture from re-reading unchanged files.
 */
export async function gitChanges(dir: string, baseCommit: string, timeoutMs: number): Promise<GitChanges | undefined> {
  const gitDir = path.join(dir, ".git");
  const st = await lstatIfPresent(gitDir);
  if (!st?.isDirectory()) return undefined;
  const config: GitConfig = [
    ...(await filterOverrides(dir)),
    ["core.excludesFile", "/dev/null"],
    ["core.ignoreStat", "false"],
    ["core.untrackedCache", "false"],
    ["core.sparseCheckout", "false"],
    ["status.relativePaths", "false"],
  ];
  const where = [`--git-dir=${gitDir}`, `--work-tree=${dir}`];
  // Past the timeout git is stopped (SIGTERM: it removes its index.lock) and the caller walks.
  const opts = { ...RUN, timeoutMs, config, optionalLocks: true };
  const [status, diff] = await Promise.all([
    execGit(dir, [...where, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--ignore-submodules=all"], opts),
    execGit(dir, [...where, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all", baseCommit, "--"], opts),
  ]);
  const changed = new Set<string>();
  const untracked: string[] = [];
  const ignored: string[] = [];
  for (const rec of status.toString("utf8").split("\0")) {
    if (rec.length < 4) continue;
    const xy = rec.slice(0, 2);
    const p = rec.slice(3);
    if (xy === "??") untracked.push(p);
    else if (xy === "!!") ignored.push(p);
    else changed.add(p);
  }
  for (const p of diff.toString("utf8").split("\0")) if (p) changed.add(p);
  return { changed: [...changed], untracked, ignored };
}

/** The most EndTurn keeps of an agent's own commit messages, in all (UTF-8 bytes). */
export const COMMIT_MESSAGES_MAX_BYTES = 64 * 1024;
/** The newest commits asked of git at most (an agent's loop of a million commits is not all read). */
const COMMITS_MAX = 1000;

/** The agent's own commits on the environment's HEAD: their messages, oldest first, and HEAD when there are any. */
export interface AgentCommits {
  readonly head: string | undefined;
  readonly messages: string[];
}

/**
 * The messages of the commits the agent made in its environment (`git commit` there): those on
 * HEAD that neither the base commit nor `seen` (the HEAD an earlier turn's read ended at) reach,
 * oldest first, at most COMMIT_MESSAGES_MAX_BYTES in all (the oldest dropped first: git lists
 * newest first, and its output is cut there). Empty messages are skipped. Undefined when HEAD is
 * not a commit (an agent's `git checkout --orphan`), or git failed or timed out.
 *
 * The environment's .git is the agent's to change: as for gitChanges, every safe setting, the
 * git directory named explicitly, a timeout, and no hook, pager or program its config names can
 * run (git log of messages converts no content and runs no filter, textconv or signature check:
 * %B only). `seen` may be gone (the agent may have pruned it): --ignore-missing.
 */
export async function agentCommits(dir: string, baseCommit: string, seen: string | undefined, timeoutMs: number): Promise<AgentCommits | undefined> {
  const gitDir = path.join(dir, ".git");
  const args = [`--git-dir=${gitDir}`, `--work-tree=${dir}`, "log", "-z", "--format=%H%n%B", "--encoding=UTF-8", `--max-count=${COMMITS_MAX}`, "--no-show-signature", "--no-color", "--ignore-missing", "HEAD", `^${baseCommit}`, ...(seen ? [`^${seen}`] : []), "--"];
  let out: Buffer;
  let cut = false;
  try {
    out = await execGit(dir, args, { ...RUN, timeoutMs, maxBuffer: COMMIT_MESSAGES_MAX_BYTES + 4096 });
  } catch (err) {
    const e = err as { code?: unknown; stdout?: unknown };
    if (e.code !== "ERR_CHILD_PROCESS_STDIO_MAXBUFFER" || !Buffer.isBuffer(e.stdout)) return undefined;
    out = e.stdout;
    cut = true;
  }
  const records = out.toString("utf8").split("\0");
  if (!cut && records.at(-1) === "") records.pop();
  // A cut output ends inside its oldest record: dropped, unless it is the only one (then shortened).
  const partial = cut && records.length === 1;
  if (cut && records.length > 1) records.pop();
  const commits = records.map((r) => {
    const nl = r.indexOf("\n");
    return { hash: nl < 0 ? r : r.slice(0, nl), message: nl < 0 ? "" : r.slice(nl + 1).replace(/\s+$/, "") };
  });
  if (commits.length === 0) return { head: undefined, messages: [] };
  const head = commits[0]!.hash;
  if (!/^[0-9a-f]{40,64}$/.test(head)) return undefined;
  const kept: string[] = [];
  let bytes = 0;
  for (const { message } of commits) {
    if (message === "") continue;
    const size = Buffer.byteLength(message);
    if (bytes + size > COMMIT_MESSAGES_MAX_BYTES || partial) {
      if (kept.length === 0) kept.push(shortened(message, COMMIT_MESSAGES_MAX_BYTES));
      break;
    }
    kept.push(message);
    bytes += size;
  }
  return { head, messages: kept.reverse() };
}

/** `text` cut to at most `max` UTF-8 bytes, at a character boundary, marked as cut. */
function shortened(text: string, max: number): string {
  const mark = "\n[…]";
  const head = Buffer.from(text, "utf8").subarray(0, max - Buffer.byteLength(mark)).toString("utf8");
  // A character split by the cut decodes as U+FFFD: dropped.
  return head.replace(/\uFFFD$/, "") + mark;
}

/**
 * Refuses an environment root inside a git repository: an environment there would be a checkout
 * nested in another work tree, and git run above it (or in it, once its .git is gone) would see
 * the other repository. Asked from the nearest existing ancestor (the root is created on first
 * use).
 */
export async function assertEnvRootOutsideRepositories(root: string): Promise<void> {
  let dir = path.resolve(root);
  while (!(await lstat(dir).then((s) => s.isDirectory(), () => false)) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const top = await enclosingWorkTree(dir);
  if (top === undefined) return;
  throw failedPrecondition(
    "ENV_ROOT_IN_REPOSITORY",
    `BERTH_ENV_ROOT ${path.resolve(root)} is inside the git repository ${top}: environments are git checkouts and must not sit in another repository's work tree; set BERTH_ENV_ROOT to a directory outside any repository (default: $XDG_DATA_HOME/berth/envs or ~/.local/share/berth/envs)`,
    { env_root: path.resolve(root), repository: top },
  );
}
