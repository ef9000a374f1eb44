/**
 * The git that talks to a git server: ls-remote, fetch, push. Every other git Berth runs has no
 * transport at all (`protocol.allow=never`, platform/git.ts); these name their one exception,
 * the scheme of the repository's URL (`protocol.<scheme>.allow=always`), and carry the
 * credentials the server's own environment gives (docs/security.md, "Remote credentials"):
 *
 * - ssh: the server user's ssh setup (keys, ~/.ssh/config, known_hosts, SSH_AUTH_SOCK), run as
 *   `ssh -o BatchMode=yes` (a prompt fails instead of hanging); GIT_SSH_COMMAND is dropped with
 *   every other GIT_* variable.
 * - http(s): one header line from BERTH_GIT_HTTP_HEADER_FILE (read at each call: a rotated
 *   token is used at once), sent as `http.extraHeader` through git's environment, never its
 *   command line (which any user of the machine can read); no credential helper, no prompt.
 *
 * The fixed safe settings hold as everywhere (no hooks, no fsmonitor, no credential helper of a
 * repository's config). A failure is classified from git's words into the reasons callers
 * answer with; git's own words go to the server's log only (a URL holds no credential, but the
 * answer is an agent's, and a file:// URL is a server path).
 */
import { readFile } from "node:fs/promises";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import { runGit, type GitConfig, type GitResult } from "../platform/git.js";
import { redactUrl, schemeOf } from "./remote-url.js";

/** How this instance reaches git servers (config: BERTH_GIT_HTTP_HEADER_FILE, BERTH_REMOTE_TIMEOUT_MS). */
export interface RemoteAccess {
  /** A fetch, push or ls-remote still running after this long is stopped (REMOTE_UNREACHABLE). */
  readonly timeoutMs: number;
  /** A file holding one `Name: value` header line sent to http(s) servers. */
  readonly httpHeaderFile?: string | undefined;
}

export type RemoteOperation = "ls-remote" | "fetch" | "push";

/** Who the failure is about: the repository (undefined while it is registered), the URL for the log. */
export interface RemoteContext {
  readonly repoId?: string | undefined;
  readonly url: string;
}

/** The settings that let one git reach `url`, and only its scheme. */
export async function transportConfig(url: string, access: RemoteAccess, ctx: RemoteContext, operation: RemoteOperation): Promise<GitConfig> {
  const scheme = schemeOf(url);
  const config: [string, string][] = [
    [`protocol.${scheme}.allow`, "always"],
    ["core.sshCommand", "ssh -o BatchMode=yes"],
    ["gc.auto", "0"],
    ["maintenance.auto", "false"],
    ["fetch.recurseSubmodules", "false"],
    ["push.recurseSubmodules", "no"],
    ["push.gpgSign", "false"],
    ["transfer.fsckObjects", "false"],
  ];
  if ((scheme === "http" || scheme === "https") && access.httpHeaderFile) config.push(["http.extraHeader", await headerLine(access.httpHeaderFile, ctx, operation)]);
  return config;
}

async function headerLine(file: string, ctx: RemoteContext, operation: RemoteOperation): Promise<string> {
  let raw: string;
  try {
    raw = await readFile(file, "utf8");
  } catch {
    throw denied(ctx, operation, "the server's BERTH_GIT_HTTP_HEADER_FILE could not be read");
  }
  const line = raw.replace(/\r?\n$/, "");
  // eslint-disable-next-line no-control-regex -- one header line: any control character (a second line) is refused
  if (!/^[A-Za-z0-9-]+:[^\u0000-\u001f\u007f]*$/.test(line)) throw denied(ctx, operation, "the server's BERTH_GIT_HTTP_HEADER_FILE must hold one `Name: value` header line");
  return line;
}

/** Runs a git that reaches the server of `ctx.url`, in `dir` (a repository of Berth's own). */
export async function remoteGit(dir: string, args: readonly string[], access: RemoteAccess, ctx: RemoteContext, operation: RemoteOperation, maxBuffer = 64 << 20): Promise<GitResult> {
  const config = await transportConfig(ctx.url, access, ctx, operation);
  try {
    return await runGit(dir, args, { timeoutMs: access.timeoutMs, maxBuffer, config });
  } catch (err) {
    // Killed at the timeout (or git could not run at all): the server did not answer in time.
    throw unreachable(ctx, operation, err instanceof Error ? err.message : String(err));
  }
}

/** The reason a failed remote git answers with, from its words (most specific first). */
export function remoteFailure(ctx: RemoteContext, operation: RemoteOperation, r: GitResult): BerthError {
  const said = r.stderr;
  if (/could not read (Username|Password)|Authentication failed|HTTP (Basic: )?Access denied|returned error: 40[13]|Permission denied \(|Host key verification failed|terminal prompts disabled/i.test(said)) {
    return denied(ctx, operation, firstLine(said));
  }
  if (/does not appear to be a git repository|not found|not exported|No such repository|not a git repository|returned error: 404/i.test(said)) {
    const which = ctx.repoId ? `repository ${ctx.repoId}` : "the repository";
    return logged(failedPrecondition("REMOTE_NOT_A_REPOSITORY", `the git server answers that there is no repository at the URL of ${which} (moved or deleted?)`, meta(ctx, operation)), ctx, said);
  }
  if (/unable to (connect|look up)|Connection (refused|reset|timed out|closed)|Could not resolve|Failed to connect|Network is unreachable|No route to host|timed out|hung up unexpectedly|Could not read from remote repository|unable to access/i.test(said)) {
    return unreachable(ctx, operation, said);
  }
  return logged(
    new BerthError("unavailable", "GIT_FAILED", `git ${operation} with the repository's git server failed: ${redactUrl(firstLine(said))}`, { ...meta(ctx, operation), command: operation, exit_code: String(r.code) }),
    ctx,
    said,
  );
}

export function unreachable(ctx: RemoteContext, operation: RemoteOperation, said: string): BerthError {
  return logged(
    new BerthError("unavailable", "REMOTE_UNREACHABLE", `the git server of ${ctx.repoId ? `repository ${ctx.repoId}` : "the repository"} could not be reached (${operation}); nothing changed, retry`, meta(ctx, operation)),
    ctx,
    said,
  );
}

function denied(ctx: RemoteContext, operation: RemoteOperation, said: string): BerthError {
  return logged(
    failedPrecondition("REMOTE_ACCESS_DENIED", `the git server of ${ctx.repoId ? `repository ${ctx.repoId}` : "the repository"} refused this server's credentials (${operation}); see docs/security.md, remote credentials`, meta(ctx, operation)),
    ctx,
    said,
  );
}

function meta(ctx: RemoteContext, operation: RemoteOperation): Record<string, string> {
  return { ...(ctx.repoId ? { repo_id: ctx.repoId } : {}), operation };
}

/** git's words and the URL (redacted) ride along as the error's cause, for the server's log. */
function logged(err: BerthError, ctx: RemoteContext, said: string): BerthError {
  (err as { cause?: unknown }).cause = new Error(`${redactUrl(ctx.url)}: ${redactUrl(said.trim()).slice(0, 2000)}`);
  return err;
}

function firstLine(s: string): string {
  return s.trim().split("\n").find((l) => l.startsWith("fatal:") || l.startsWith("error:")) ?? s.trim().split("\n")[0] ?? "";
}
