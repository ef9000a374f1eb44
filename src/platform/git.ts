/**
 * The only way Berth runs git (an ESLint rule and test/platform/git-safety.test.ts hold every
 * other module to it). A repository Berth reads is not Berth's: its .git/config, the machine's
 * /etc/gitconfig and the server user's ~/.gitconfig can all name programs for git to run
 * (hooks, core.fsmonitor, a filter driver's smudge command that `git archive` runs for every
 * file a committed .gitattributes marks, gpg for a signature). So every git starts with:
 *
 * - an environment of its own: every inherited GIT_* variable dropped (GIT_DIR,
 *   GIT_CONFIG_PARAMETERS, … would redirect or reconfigure it), no system or global config
 *   (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null — HOME is left as it is: with both files
 *   ignored git reads nothing from it), no system attributes, no prompts, no optional locks;
 * - fixed `-c` settings that win over the repository's own config: no hooks, no fsmonitor, no
 *   signature checks, no credential helper, no transport at all: the one caller that fetches and
 *   pushes (src/repository/remote-git.ts, a repository on a git server) names its exception,
 *   the one scheme of the repository's URL (`protocol.<scheme>.allow`, in its `config`);
 * - for commands that convert content (`git archive`, and a checkout's status and update), every
 *   filter driver the repository's config defines switched off by name (`filterOverrides`):
 *   `-c` cannot say "all filters". Those go in GIT_CONFIG_COUNT/KEY/VALUE rather than `-c`: a key
 *   is taken as it is there, whatever characters the driver's name holds (`-c` splits at the
 *   first "=");
 * - for a three-way merge or a fast-import, a repository of Berth's own that shares only the
 *   object store (`withObjectStoreOf`): merge drivers cannot be switched off by name (below), and
 *   fast-import's commit needs a ref that is not the source's; for a diff or a rebase's merges,
 *   one whose new objects stay in a store of its own (`withScratchStoreOver`).
 *
 * Every git started here is reported to the observers of `observeGitSpawns` (tests count the
 * processes a call starts), and a caller may stream git's stdin (`feed`) instead of handing it
 * one buffer: fast-import reads a landing's files as PostgreSQL answers them.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import type { Writable } from "node:stream";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const execFileP = promisify(execFile);

/** `-c` settings every git call carries, ahead of its own arguments. */
export const SAFE_CONFIG: readonly string[] = [
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "log.showSignature=false",
  "protocol.allow=never",
  "credential.helper=",
  "core.pager=cat",
];

let env: NodeJS.ProcessEnv | undefined;

/**
 * glibc gives the top of the heap back to the kernel once 128 KiB of it is free; git frees its
 * zlib state after every object, so fast-import of 1,000 files made ~3,000 brk calls (each
 * zeroing pages again) and spent 0.3 s of a 0.34 s run in the kernel. Keeping up to 8 MiB free
 * at the top takes it to 0.03 s with the same peak RSS (measured, docs/decisions.md). The
 * operator's own GLIBC_TUNABLES follow it, so theirs win; other C libraries ignore it.
 */
const MALLOC_TRIM = "glibc.malloc.trim_threshold=8388608";

/** The process environment git runs with (computed once: Berth never changes its own GIT_* afterwards). */
export function gitEnv(): NodeJS.ProcessEnv {
  if (env) return env;
  const e: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("GIT_")) e[k] = v;
  Object.assign(e, {
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_PAGER: "cat",
  });
  e.GLIBC_TUNABLES = [MALLOC_TRIM, e.GLIBC_TUNABLES].filter(Boolean).join(":");
  return (env = e);
}

/** The full argument list: the safe settings, then `-C repo` and the command. */
export function gitArgs(repoPath: string, args: readonly string[]): string[] {
  const out: string[] = [];
  for (const c of SAFE_CONFIG) out.push("-c", c);
  out.push("-C", repoPath, ...args);
  return out;
}

/** What an observer of git's processes is told of each one, as it starts. */
export interface GitSpawn {
  readonly repoPath: string;
  readonly args: readonly string[];
}

const spawnObservers = new Set<(spawned: GitSpawn) => void>();

/**
 * Tells `observer` of every git process started from now on (in this process), until the
 * returned function is called. A seam for tests: the number of processes a call starts is
 * what landing's cost follows (issue 30).
 */
export function observeGitSpawns(observer: (spawned: GitSpawn) => void): () => void {
  spawnObservers.add(observer);
  return () => spawnObservers.delete(observer);
}

function spawned(repoPath: string, args: readonly string[]): void {
  for (const o of spawnObservers) o({ repoPath, args });
}

/**
 * Where a caller writes a git's stdin piece by piece (`feed`): a write waits while the pipe is
 * full, so what is not yet written is never more than the caller holds. Rejects with
 * GitStdinClosed once git stopped reading (it exited: its exit code says why).
 */
export interface GitSink {
  write(chunk: Uint8Array | string): Promise<void>;
}

/** A write to a git that no longer reads its stdin. */
export class GitStdinClosed extends Error {
  constructor() {
    super("git closed its stdin");
  }
}

function sinkOver(stdin: Writable): GitSink {
  return {
    async write(chunk) {
      if (stdin.destroyed || stdin.writableEnded) throw new GitStdinClosed();
      if (stdin.write(chunk)) return;
      await new Promise<void>((resolve, reject) => {
        const drained = () => {
          stdin.off("close", closed);
          resolve();
        };
        const closed = () => {
          stdin.off("drain", drained);
          reject(new GitStdinClosed());
        };
        stdin.once("drain", drained);
        stdin.once("close", closed);
      });
    },
  };
}

/** Extra settings (key, value) for one call, on top of gitEnv(). */
export type GitConfig = readonly (readonly [string, string])[];

function envWith(config: GitConfig | undefined, opts: { optionalLocks?: boolean | undefined } = {}): NodeJS.ProcessEnv {
  const { optionalLocks = false } = opts;
  const e: NodeJS.ProcessEnv = {
    ...gitEnv(),
    ...(optionalLocks ? { GIT_OPTIONAL_LOCKS: "1" } : {}),
  };
  if (!config || config.length === 0) return e;
  e.GIT_CONFIG_COUNT = String(config.length);
  config.forEach(([k, v], i) => {
    e[`GIT_CONFIG_KEY_${i}`] = k;
    e[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return e;
}

export interface GitExecOptions {
  readonly timeoutMs: number;
  readonly maxBuffer: number;
  /** Extra settings (e.g. filterOverrides). */
  readonly config?: GitConfig;
  /**
   * Let a read-only command (status) refresh the index it reads. Off by default: in a
   * repository that is not Berth's, even the index is not ours to rewrite.
   */
  readonly optionalLocks?: boolean;
  /** Written to git's stdin (closed either way). */
  readonly input?: Uint8Array;
  /**
   * Instead of `input`: writes git's stdin as it goes, which is closed when it settles. When it
   * rejects, git sees its input end early and the call rejects with the feed's error (or git's,
   * when the feed failed because git had stopped reading).
   */
  readonly feed?: (sink: GitSink) => Promise<void>;
  /** Exit codes that are answers, not failures (`merge-file` counts conflicts in it): resolved with the code. */
  readonly okCodes?: readonly number[];
}

/** Runs git to completion; rejects (with `code` = git's exit code) when it fails. */
export async function execGit(repoPath: string, args: readonly string[], options: GitExecOptions): Promise<Buffer> {
  return (await execGitCode(repoPath, args, options)).stdout;
}

/** As execGit, also answering git's exit code (0, or one of `okCodes`). */
export async function execGitCode(repoPath: string, args: readonly string[], options: GitExecOptions): Promise<{ stdout: Buffer; code: number }> {
  try {
    return { stdout: (await execGitRun(repoPath, args, options)).stdout, code: 0 };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: Buffer };
    if (typeof e.code === "number" && options.okCodes?.includes(e.code) && e.stdout) return { stdout: e.stdout, code: e.code };
    throw err;
  }
}

/** The one execFile of git: the fixed environment (plus locks, plumbing variables), stdin fed and closed. */
function execGitRun(repoPath: string, args: readonly string[], options: GitExecOptions & { extraEnv?: Readonly<Record<string, string>> }): Promise<{ stdout: Buffer; stderr: Buffer }> {
  spawned(repoPath, args);
  const run = execFileP("git", gitArgs(repoPath, args), {
    env: { ...envWith(options.config, { optionalLocks: options.optionalLocks }), ...options.extraEnv },
    timeout: options.timeoutMs,
    maxBuffer: options.maxBuffer,
    encoding: "buffer",
  });
  const stdin = run.child.stdin!;
  stdin.on("error", () => {}); // EPIPE when git exits before reading it all: its exit code says why
  if (options.feed) return fed(run, stdin, options.feed);
  stdin.end(options.input ? Buffer.from(options.input.buffer, options.input.byteOffset, options.input.byteLength) : undefined);
  return run;
}

/** execGitRun's end when a feed writes stdin: the feed runs, stdin closes, and git's end decides (see GitExecOptions.feed). */
async function fed<T>(run: Promise<T>, stdin: Writable, feed: (sink: GitSink) => Promise<void>): Promise<T> {
  run.catch(() => {}); // a git that fails while the feed still writes is answered below, not left unhandled
  let failed: { err: unknown } | undefined;
  try {
    await feed(sinkOver(stdin));
  } catch (err) {
    failed = { err };
  }
  stdin.end();
  if (!failed) return run;
  if (failed.err instanceof GitStdinClosed) return run; // git's own failure (or, oddly, success) is the answer
  await run.catch(() => {});
  throw failed.err;
}

/** A long-lived or streaming git (cat-file --batch, archive), all three streams piped (end stdin if it reads none). */
export function spawnGit(repoPath: string, args: readonly string[], options: { config?: GitConfig } = {}): ChildProcessWithoutNullStreams {
  spawned(repoPath, args);
  return spawn("git", gitArgs(repoPath, args), { env: envWith(options.config), stdio: ["pipe", "pipe", "pipe"] });
}

/**
 * Settings that switch off every filter driver `repoPath`'s config defines
 * (filter.<name>.{smudge,clean,process} emptied, required=false): a committed .gitattributes
 * may name any of them, and `git archive` would run its command on the file's content.
 */
export async function filterOverrides(repoPath: string): Promise<GitConfig> {
  let out: Buffer;
  try {
    out = await execGit(repoPath, ["config", "--name-only", "--get-regexp", "^filter\\."], { timeoutMs: 10_000, maxBuffer: 1 << 20 });
  } catch (err) {
    if ((err as { code?: unknown }).code === 1) return []; // no filter.* key at all
    throw err;
  }
  const names = new Set<string>();
  for (const key of out.toString("utf8").split("\n")) {
    const last = key.lastIndexOf(".");
    if (key.startsWith("filter.") && last > "filter.".length) names.add(key.slice("filter.".length, last));
  }
  const config: [string, string][] = [];
  for (const n of names) for (const [k, v] of [["smudge", ""], ["clean", ""], ["process", ""], ["required", "false"]] as const) config.push([`filter.${n}.${k}`, v]);
  return config;
}

/**
 * The top of the work tree enclosing `dir` (`git rev-parse --show-toplevel`), or undefined when
 * `dir` is in none. A repository git refuses to open for its owner ("dubious ownership") is
 * still a repository: it is named, not taken for "none".
 */
export async function enclosingWorkTree(dir: string): Promise<string | undefined> {
  try {
    const out = await execGit(dir, ["rev-parse", "--show-toplevel"], { timeoutMs: 10_000, maxBuffer: 1 << 16 });
    return out.toString("utf8").trim() || undefined;
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "");
    if (/not a git repository/i.test(stderr)) return undefined;
    const owned = /dubious ownership in repository at '([^']+)'/.exec(stderr);
    if (owned) return owned[1];
    throw err;
  }
}

/** runGit's options: execGit's, and the plumbing variables it may set. */
export interface GitRunOptions {
  readonly timeoutMs: number;
  readonly maxBuffer: number;
  /** Written to git's stdin, which is then closed (hash-object --stdin, mktree). */
  readonly input?: Uint8Array;
  /** Instead of `input`: git's stdin written as it goes (GitExecOptions.feed). */
  readonly feed?: (sink: GitSink) => Promise<void>;
  /**
   * Variables on top of gitEnv(), for the plumbing that takes its parameters there only
   * (GIT_INDEX_FILE, GIT_AUTHOR_*, GIT_COMMITTER_*). Names outside that list are refused: the
   * rest of the GIT_* space would undo the fixed environment.
   */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra settings (e.g. filterOverrides). */
  readonly config?: GitConfig;
}

const RUN_ENV = /^GIT_(INDEX_FILE|AUTHOR_(NAME|EMAIL|DATE)|COMMITTER_(NAME|EMAIL|DATE))$/;

/** A finished git: its exit code (not thrown: plumbing answers with it, e.g. merge-tree's 1 = conflicts) and output. */
export interface GitResult {
  readonly code: number;
  readonly stdout: Buffer;
  readonly stderr: string;
}

/** execGit answering every exit code (with stderr) instead of rejecting; rejects only when git could not run or overran. */
export async function runGit(repoPath: string, args: readonly string[], options: GitRunOptions): Promise<GitResult> {
  for (const k of Object.keys(options.env ?? {})) if (!RUN_ENV.test(k)) throw new Error(`runGit: ${k} may not be set`);
  return runGitWith(repoPath, args, options, options.env);
}

async function runGitWith(repoPath: string, args: readonly string[], options: GitRunOptions, env: Readonly<Record<string, string>> | undefined): Promise<GitResult> {
  try {
    const { stdout, stderr } = await execGitRun(repoPath, args, { ...options, ...(env ? { extraEnv: env } : {}) });
    return { code: 0, stdout, stderr: stderr.toString("utf8") };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: Buffer; stderr?: Buffer };
    if (typeof e.code !== "number") throw err; // timeout, maxBuffer, spawn failure
    return { code: e.code, stdout: e.stdout ?? Buffer.alloc(0), stderr: e.stderr?.toString("utf8") ?? "" };
  }
}

/** runGit in the repository a piece of work was given (withObjectStoreOf). */
export type GitRunner = (args: readonly string[], options: GitRunOptions) => Promise<GitResult>;

/**
 * Runs `work` in a bare repository of Berth's own (a temporary directory, removed afterwards)
 * whose object store is `repoPath`'s (GIT_OBJECT_DIRECTORY; the source's alternates and shallow
 * boundary come along): git reads and writes the source's objects there and nothing else of it —
 * not its config, not its attributes (info/attributes, a work tree's .gitattributes), not its
 * hooks, not its refs. What `git merge-tree` needs this for: a custom merge driver is a program
 * named by the repository's config (`merge.<name>.driver`, and `merge.default` for every file)
 * and chosen by its attributes (also the merged trees' own .gitattributes under
 * `merge.renormalize`, which runs clean filters too), and `-c` cannot remove one:
 * `merge.<name>.driver=` is still a driver, an empty command that fails the merge. In a
 * repository whose config names no driver, every `merge=<name>` falls back to git's built-in
 * text merge. What `git fast-import` needs it for: its commit is made on a ref, which is this
 * repository's, never one of the source's.
 */
export async function withObjectStoreOf<T>(repoPath: string, work: (run: GitRunner) => Promise<T>): Promise<T> {
  return withOwnRepository(repoPath, "shared", work);
}

/**
 * As withObjectStoreOf, but git writes new objects into the temporary repository's own store,
 * and reads the source's through its alternates (objects/info/alternates): diffs and rebases
 * build trees and merges of an overlay without adding anything to the source repository, and
 * what they wrote goes with the directory.
 */
export async function withScratchStoreOver<T>(repoPath: string, work: (run: GitRunner) => Promise<T>): Promise<T> {
  return withOwnRepository(repoPath, "scratch", work);
}

/** Where a source repository keeps its objects, its shallow file, and its object format. */
interface SourceStore {
  readonly objects: string;
  readonly shallow: string;
  readonly format: string;
}

/** SourceStore by repository path: asked of git once (a rev-parse per landing call was a process per call); dropped when work in it fails. */
const stores = new Map<string, Promise<SourceStore>>();
const STORES_KEPT = 256;

function sourceStore(repoPath: string): Promise<SourceStore> {
  const hit = stores.get(repoPath);
  if (hit) return hit;
  const p = (async () => {
    const out = await execGit(repoPath, ["rev-parse", "--path-format=absolute", "--git-path", "objects", "--git-path", "shallow", "--show-object-format"], { timeoutMs: 10_000, maxBuffer: 1 << 20 });
    const [objects = "", shallow = "", format = ""] = out.toString("utf8").split("\n");
    return { objects, shallow, format };
  })();
  stores.set(repoPath, p);
  p.catch(() => stores.delete(repoPath));
  if (stores.size > STORES_KEPT) stores.delete(stores.keys().next().value!);
  return p;
}

async function withOwnRepository<T>(repoPath: string, store: "shared" | "scratch", work: (run: GitRunner) => Promise<T>): Promise<T> {
  const source = await sourceStore(repoPath);
  const dir = await mkdtemp(path.join(tmpdir(), store === "shared" ? "berth-objects-of-" : "berth-scratch-"));
  try {
    await bareRepository(dir, source.format);
    await copyFile(source.shallow, path.join(dir, "shallow")).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err; // not a shallow repository
    });
    if (store === "scratch") await writeFile(path.join(dir, "objects", "info", "alternates"), `${source.objects}\n`);
    const env = store === "shared" ? { GIT_OBJECT_DIRECTORY: source.objects } : undefined;
    return await work((args, options) => {
      if (options.env) throw new Error("a run in a repository of Berth's own takes no variables");
      return runGitWith(dir, args, options, env);
    });
  } catch (err) {
    // The source may have moved or changed since its store was asked for: ask again next time.
    stores.delete(repoPath);
    throw err;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * An empty bare repository in `dir`, made by hand rather than by a `git init` process: what git
 * needs to take a directory for one (gitrepository-layout: HEAD, objects/, refs/), and for an
 * object format other than sha1 the config that says so. No hooks, no description, no info/.
 */
async function bareRepository(dir: string, format: string): Promise<void> {
  if (format !== "sha1" && format !== "sha256") throw new Error(`unknown object format ${JSON.stringify(format)}`);
  for (const d of ["objects/info", "objects/pack", "refs/heads", "refs/tags"]) await mkdir(path.join(dir, d), { recursive: true });
  await writeFile(path.join(dir, "HEAD"), "ref: refs/heads/main\n");
  const config = format === "sha1" ? "[core]\n\trepositoryformatversion = 0\n\tbare = true\n" : `[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = ${format}\n`;
  await writeFile(path.join(dir, "config"), config);
}
