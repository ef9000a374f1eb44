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
 *   signature checks, no transport at all (Berth fetches nothing; a future caller that must
 *   names its one exception);
 * - for commands that convert content (`git archive`), every filter driver the repository's
 *   config defines switched off by name (`filterOverrides`): `-c` cannot say "all filters".
 *   Those go in GIT_CONFIG_COUNT/KEY/VALUE rather than `-c`: a key is taken as it is there,
 *   whatever characters the driver's name holds (`-c` splits at the first "=").
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
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
  return (env = e);
}

/** The full argument list: the safe settings, then `-C repo` and the command. */
export function gitArgs(repoPath: string, args: readonly string[]): string[] {
  const out: string[] = [];
  for (const c of SAFE_CONFIG) out.push("-c", c);
  out.push("-C", repoPath, ...args);
  return out;
}

/** Extra settings (key, value) for one call, on top of gitEnv(). */
export type GitConfig = readonly (readonly [string, string])[];

/**
 * A scratch object store and index for one call (diffs and rebases build trees of an overlay
 * without writing into the source repository: new objects go to `objectDir`, the repository's
 * own are read through `alternates`).
 */
export interface GitScratch {
  readonly objectDir: string;
  readonly alternates: string;
  readonly indexFile: string;
}

function envWith(config: GitConfig | undefined, scratch?: GitScratch): NodeJS.ProcessEnv {
  const base = scratch
    ? { ...gitEnv(), GIT_OBJECT_DIRECTORY: scratch.objectDir, GIT_ALTERNATE_OBJECT_DIRECTORIES: scratch.alternates, GIT_INDEX_FILE: scratch.indexFile }
    : gitEnv();
  if (!config || config.length === 0) return base;
  const e: NodeJS.ProcessEnv = { ...base, GIT_CONFIG_COUNT: String(config.length) };
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
  /** Written to git's stdin (closed either way). */
  readonly input?: Uint8Array;
  /** A scratch object store and index (see GitScratch). */
  readonly scratch?: GitScratch;
  /** Exit codes that are answers, not failures (`merge-file` counts conflicts in it): resolved with the code. */
  readonly okCodes?: readonly number[];
}

/** Runs git to completion; rejects (with `code` = git's exit code) when it fails. */
export async function execGit(repoPath: string, args: readonly string[], options: GitExecOptions): Promise<Buffer> {
  return (await execGitCode(repoPath, args, options)).stdout;
}

/** As execGit, also answering git's exit code (0, or one of `okCodes`). */
export async function execGitCode(repoPath: string, args: readonly string[], options: GitExecOptions): Promise<{ stdout: Buffer; code: number }> {
  const run = execFileP("git", gitArgs(repoPath, args), {
    env: envWith(options.config, options.scratch),
    timeout: options.timeoutMs,
    maxBuffer: options.maxBuffer,
    encoding: "buffer",
  });
  run.child.stdin?.on("error", () => {}); // EPIPE when git exits before reading it all: its exit code says why
  run.child.stdin?.end(options.input ? Buffer.from(options.input.buffer, options.input.byteOffset, options.input.byteLength) : undefined);
  try {
    return { stdout: (await run).stdout, code: 0 };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: Buffer };
    if (typeof e.code === "number" && options.okCodes?.includes(e.code) && e.stdout) return { stdout: e.stdout, code: e.code };
    throw err;
  }
}

/** A long-lived or streaming git (cat-file --batch, archive), all three streams piped (end stdin if it reads none). */
export function spawnGit(repoPath: string, args: readonly string[], options: { config?: GitConfig } = {}): ChildProcessWithoutNullStreams {
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
