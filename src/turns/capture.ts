/**
 * Capture: what an agent wrote into its environment reaches the overlay (docs/turns.md,
 * "Nothing written is lost"). It goes through the overlay's own writeFile/deleteFile, not
 * around them, so a captured edit is claimed, checked and reported like any WriteFile.
 *
 * A path that fails is reported, never dropped, and never retried blindly: what did capture is
 * recorded in the manifest (and is not re-sent), what did not stays different from it. The
 * caller decides what a failure means — EndTurn answers CAPTURE_INCOMPLETE, a teardown keeps
 * the directory under .unsaved/ and stores a turn.capture_failed event.
 *
 * What capture leaves out on purpose is reported too (EndTurn's `left_out`): paths the
 * environment's .gitignore files or the repository's capture_exclude list exclude (an
 * `npm install` inside a turn would otherwise become thousands of overlay rows and claims),
 * files over the overlay's size limit, which are never read (their size is known from lstat),
 * and whatever is not a regular file with one name (links, FIFOs, sockets, devices, hard links,
 * a submodule's directory), which is never opened. The directory is the agent's: nothing in it
 * may hang capture (git is stopped after a bounded time), or cost the server more memory than a
 * few files (files are streamed into the overlay, the quota asked before a read).
 * A path the manifest holds (a file of the base or of the overlay) is captured whatever the
 * ignore rules say, as git tracks a tracked file whatever .gitignore says: so a deletion is
 * never inferred from a rule.
 */
import type { Logger } from "pino";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import type { OverlayPort, OverlayUse } from "../overlay/overlay-port.js";
import type { Workspace } from "../sessions/workspace.js";
import { saveManifest, type Environment } from "./environment.js";
import { compileGitignore, RULE_FILE_MAX_BYTES } from "./map/walk-core.mjs";
import type { LeftOut, LeftOutReason } from "./turn.js";
import { readInside, rootOf } from "./safe-fs.js";
import { agentCommits, gitCannotRead, type AgentCommits } from "./env-git.js";
import { changes, type CaptureBase, type Sink } from "./capture-changes.js";

export type { LeftOut, LeftOutReason } from "./turn.js";
export type { CaptureBase } from "./capture-changes.js";

export interface CaptureResult {
  readonly captured: string[];
  readonly failed: { path: string; reason: string }[];
  /** At most LEFT_OUT_REPORTED of them. */
  readonly leftOut: LeftOut[];
  /**
   * Left-out paths that hold what the agent wrote and Berth cannot store (UNSAVED_REASONS): a
   * teardown keeps the directory for them, as for a failed path.
   */
  readonly unsaved: LeftOut[];
}

export interface CaptureOptions {
  /** The session has just been stranded: the overlay accepts this capture (WriteInput.ending). */
  readonly ending?: boolean;
  /**
   * There is no overlay to write into any more (the session ended for good while the directory
   * waited for a restart): nothing is written, and every change is reported failed with this
   * reason, so the teardown keeps the directory and says so.
   */
  readonly nowhere?: string;
  /** The second pass after a path's shape changed (capture() runs at most one). */
  readonly again?: boolean;
}

export interface CaptureDeps {
  readonly root: string;
  readonly overlay: OverlayPort;
  readonly logger: Logger;
  /** Files over this many bytes are left out (`too_large`), never read: the overlay's BERTH_MAX_FILE_BYTES. */
  readonly maxFileBytes: number;
  /** The repository's capture_exclude patterns (gitignore syntax, from the repository root). */
  readonly excludeOf: (ws: Workspace) => Promise<readonly string[]>;
  /** The workspace's base files when its environment is a checkout (a repository with a source), else undefined. */
  readonly baseOf: (ws: Workspace) => Promise<CaptureBase | undefined>;
  /** Keeps a background promise (the manifest save) until the scheduler stops. */
  readonly track: (p: Promise<unknown>) => void;
}

/** At most this many left-out entries are reported per capture (the rest are counted in the log). */
const LEFT_OUT_REPORTED = 200;

/** The overlay's refusals of a write for the path's shape (a file where the view has a directory, or below a file). */
const SHAPE_REASONS: ReadonlySet<string> = new Set(["PATH_IS_DIRECTORY", "PATH_UNDER_FILE"]);

/** Left-out reasons whose paths hold content the agent wrote that the overlay cannot take. */
const UNSAVED_REASONS: ReadonlySet<LeftOutReason> = new Set(["submodule", "hardlink"]);

export class Capture {
  constructor(private readonly deps: CaptureDeps) {}

  /**
   * Captures the directory's changes into the overlay through writeFile/deleteFile (claims,
   * events), one file at a time per reader (READ_CONCURRENCY): each is read, hashed and written,
   * then dropped. A file that the overlay's quota cannot take (an estimate from usage()) is
   * reported failed without being read.
   */
  async capture(ws: Workspace, env: Environment, options: CaptureOptions = {}): Promise<CaptureResult> {
    const ending = options.ending === true;
    const nowhere = options.nowhere;
    const exclude = await this.deps.excludeOf(ws);
    const captured: string[] = [];
    const failed: { path: string; reason: string }[] = [];
    let use: Promise<QuotaEstimate> | undefined;
    const sink: Sink = {
      admit: async (p, size) => {
        if (nowhere !== undefined) return undefined;
        use ??= this.deps.overlay.usage(ws).then((u) => new QuotaEstimate(u));
        return (await use).admit(p, size) ? undefined : "OVERLAY_QUOTA_EXCEEDED";
      },
      write: async (p, content, entry) => {
        if (nowhere !== undefined) {
          failed.push({ path: p, reason: nowhere });
          return;
        }
        try {
          await this.deps.overlay.writeFile({ workspace: ws, path: p, content, ...(ending ? { ending } : {}) });
          env.manifest.set(p, entry);
          captured.push(p);
        } catch (err) {
          failed.push({ path: p, reason: reasonOf(err) });
        }
      },
      fail: (p, reason) => failed.push({ path: p, reason }),
    };
    const d = await changes(env, await this.deps.baseOf(ws), exclude.length > 0 ? compileGitignore(exclude.join("\n")) : undefined, this.deps.maxFileBytes, this.deps.logger, sink);
    for (const p of d.deleted) {
      if (nowhere !== undefined) {
        failed.push({ path: p, reason: nowhere });
        continue;
      }
      try {
        await this.deps.overlay.deleteFile({ workspace: ws, path: p, ...(ending ? { ending } : {}) });
        env.manifest.delete(p);
        captured.push(p);
      } catch (err) {
        if (err instanceof BerthError && err.kind === "not_found") {
          env.manifest.delete(p);
          captured.push(p);
        } else failed.push({ path: p, reason: reasonOf(err) });
      }
    }
    for (const t of d.touched) env.manifest.set(t.path, t.entry);
    if (captured.length > 0 || d.touched.length > 0) {
      this.deps.track(saveManifest(this.deps.root, env).catch((err: unknown) => this.deps.logger.warn({ err }, "turn pool: saving the manifest failed")));
    }
    if (captured.length > 0) this.deps.logger.info({ workspaceId: ws.workspaceId, paths: captured.length, failed: failed.length, ending }, "turn: captured the directory's changes into the overlay");
    if (d.leftOut.length > 0) this.deps.logger.info({ workspaceId: ws.workspaceId, leftOut: d.leftOut.length, first: d.leftOut.slice(0, 5) }, "turn: capture left paths out (gitignored, excluded, too large, or not regular files)");
    // A directory the agent replaced by a file (or the reverse): its write came before the
    // deletions that make room for it and was refused for the path's shape; once they are in,
    // one more pass writes it (the rest is unchanged by then and only compared).
    if (!options.again && failed.some((f) => SHAPE_REASONS.has(f.reason)) && captured.some((p) => !env.manifest.has(p))) {
      const again = await this.capture(ws, env, { ...options, again: true });
      return { captured: [...captured, ...again.captured], failed: again.failed, leftOut: again.leftOut, unsaved: again.unsaved };
    }
    const unsaved = d.leftOut.filter((l) => UNSAVED_REASONS.has(l.reason));
    return { captured, failed, leftOut: d.leftOut.slice(0, LEFT_OUT_REPORTED), unsaved };
  }

  /**
   * The messages of the commits the agent made in a checkout since the base commit, or since
   * `env.headSeen` (env-git.ts agentCommits), for EndTurn to keep with the turn; the caller
   * moves headSeen once the turn's row holds them. None for an environment of the overlay alone,
   * or one whose git files are not small regular files (gitCannotRead, as for capture; nothing
   * is opened then). HEAD at the base or at headSeen — no commit since — is read from its two
   * small files, without starting git: what most turns find. A failure costs the messages, not
   * the turn (logged).
   */
  async commitMessages(ws: Workspace, env: Environment): Promise<AgentCommits> {
    const none: AgentCommits = { head: undefined, messages: [] };
    let found: AgentCommits | undefined;
    try {
      const base = await this.deps.baseOf(ws);
      if (!base) return none;
      const head = await headCommit(env.path);
      if (head !== undefined && (head === base.commit || head === env.headSeen)) return none;
      if ((await gitCannotRead(env.path, [], RULE_FILE_MAX_BYTES)) !== undefined) return none;
      found = await agentCommits(env.path, base.commit, env.headSeen, COMMIT_MESSAGES_TIMEOUT_MS);
    } catch (err) {
      this.deps.logger.warn({ err, path: env.path, workspaceId: ws.workspaceId }, "turn: reading the agent's own commits in the environment failed; their messages are not kept");
      return none;
    }
    if (!found) this.deps.logger.warn({ path: env.path, workspaceId: ws.workspaceId }, "turn: git could not list the agent's own commits in the environment (HEAD not a commit, or git failed or timed out); their messages are not kept");
    return found ?? none;
  }
}

/**
 * The commit HEAD names, read as git stores it when that is plain: a detached HEAD's hash, or a
 * branch's loose ref file. Undefined when it is anything else (a packed ref, a symbolic ref
 * elsewhere, a link or a special file: safe-fs reads follow no link and open no FIFO): git is asked.
 */
async function headCommit(dir: string): Promise<string | undefined> {
  const root = await rootOf(dir);
  const read = async (rel: string) => (await readInside(root, rel, 4096).catch(() => undefined))?.content?.toString("utf8").trim();
  const head = await read(".git/HEAD");
  if (head === undefined) return undefined;
  if (/^[0-9a-f]{40,64}$/.test(head)) return head;
  const ref = /^ref: (refs\/heads\/[A-Za-z0-9._/-]+)$/.exec(head)?.[1];
  if (ref === undefined || ref.split("/").some((s) => s === "" || s === "." || s === "..")) return undefined;
  const commit = await read(`.git/${ref}`);
  return commit !== undefined && /^[0-9a-f]{40,64}$/.test(commit) ? commit : undefined;
}

/** How long git may take to list the agent's commits before EndTurn goes on without their messages. */
const COMMIT_MESSAGES_TIMEOUT_MS = 10_000;

/**
 * The overlay's use as a capture goes on: each file admitted is counted in before it is read (its
 * size from lstat), so files read at the same time cannot together overrun what one alone may
 * take. The rule is the overlay's own (file-writes.ts checkQuota): a change that grows neither
 * measure always passes.
 */
class QuotaEstimate {
  private files: number;
  private bytes: number;
  private readonly mine = new Map<string, number>();

  constructor(private readonly use: OverlayUse) {
    this.files = use.files;
    this.bytes = use.bytes;
  }

  admit(p: string, size: number): boolean {
    const had = this.mine.has(p) ? this.mine.get(p) : this.use.rowBytes(p);
    const files = this.files + (had === undefined ? 1 : 0);
    const bytes = this.bytes - (had ?? 0) + size;
    if (this.use.maxFiles > 0 && files > this.use.maxFiles && files > this.files) return false;
    if (this.use.maxBytes > 0 && bytes > this.use.maxBytes && bytes > this.bytes) return false;
    this.files = files;
    this.bytes = bytes;
    this.mine.set(p, size);
    return true;
  }
}

/** EndTurn's answer when some path could not be captured: the turn stays RUNNING, its directory untouched. */
export function captureIncomplete(turnId: string, r: CaptureResult): BerthError {
  return failedPrecondition(
    "CAPTURE_INCOMPLETE",
    `turn ${turnId}: ${r.failed.length} path(s) could not be captured into the overlay (${r.failed[0]!.reason}); the turn is still running and its environment is kept — resolve and call EndTurn again`,
    { turn_id: turnId, paths: r.failed.map((f) => f.path).join(","), reason: r.failed[0]!.reason, captured: String(r.captured.length) },
  );
}

function reasonOf(err: unknown): string {
  if (err instanceof BerthError) return err.reason;
  return err instanceof Error ? err.message : String(err);
}
