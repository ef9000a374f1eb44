/**
 * Repository-relative paths of the overlay: the one place their rules live. WriteFile and every
 * other RPC taking a path (api/validate.ts), the write path itself (file-writes.ts: capture goes
 * through it), materialise and capture's directory walk (turns/environment.ts) all ask here.
 *
 * normalisePath collapses "." segments and repeated slashes (and a trailing slash) and refuses
 * what could escape the repository or confuse a materialised checkout: absolute paths, ".."
 * segments, backslashes, NUL and other control characters, paths over 4096 bytes, and a `.git`
 * component anywhere (isGitName: a .git/config or hook inside an environment names programs
 * that git runs there). symlinkOnPath says whether a path goes through one of the base commit's
 * symbolic links (a write below one would land wherever the link points).
 */
import { invalidArgument, type FieldViolation } from "../platform/errors.js";

export const MAX_PATH_BYTES = 4096;

// eslint-disable-next-line no-control-regex -- rejecting the ASCII controls (C0 and DEL) is the point; \p{Cc} would also take C1
const CONTROL = /[\u0000-\u001f\u007f]/;

export type PathResult = { ok: true; path: string } | { ok: false; violation: FieldViolation };

export function normalisePath(field: string, raw: string, options: { allowEmpty?: boolean } = {}): PathResult {
  const bad = (reason: string, description: string): PathResult => ({ ok: false, violation: { field, reason, description } });
  if (raw === "") return options.allowEmpty ? { ok: true, path: "" } : bad("REQUIRED", "required");
  if (Buffer.byteLength(raw, "utf8") > MAX_PATH_BYTES) return bad("TOO_LONG", `at most ${MAX_PATH_BYTES} bytes`);
  if (raw.includes("\u0000")) return bad("NUL_CHARACTER", "must not contain NUL");
  if (CONTROL.test(raw)) return bad("CONTROL_CHARACTER", "must not contain control characters");
  if (raw.includes("\\")) return bad("BACKSLASH", "must use / as the separator, not \\");
  if (raw.startsWith("/")) return bad("ABSOLUTE_PATH", "must be relative to the repository root");
  if (/^[A-Za-z]:/.test(raw)) return bad("ABSOLUTE_PATH", "must be relative to the repository root");
  const segments: string[] = [];
  for (const s of raw.split("/")) {
    if (s === "" || s === ".") continue;
    if (s === "..") return bad("PARENT_SEGMENT", "must not contain .. segments");
    segments.push(s);
  }
  if (segments.length === 0) return options.allowEmpty ? { ok: true, path: "" } : bad("EMPTY_PATH", "names no file");
  const git = segments.find(isGitName);
  if (git !== undefined) return bad("GIT_DIRECTORY", `must not have a .git component (any case), got ${JSON.stringify(git)} in ${JSON.stringify(raw)}`);
  return { ok: true, path: segments.join("/") };
}

/** The code points HFS+ ignores in names (git's is_hfs_dotgit list): ".g\u200cit" is ".git" there. */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * A name that is, or that some filesystem Berth's environments may sit on treats as, `.git`:
 * any case (case-insensitive filesystems), trailing dots and spaces (NTFS drops them), the
 * code points HFS+ ignores, and NTFS's short name `git~1` — the names git itself refuses to
 * check out (core.protectNTFS / core.protectHFS).
 */
export function isGitName(segment: string): boolean {
  const s = segment.replace(HFS_IGNORED, "").toLowerCase();
  return /^\.git[. ]*$/.test(s) || s === "git~1";
}

/** A path as normalisePath returns it, or INVALID_ARGUMENT on `field` (the write path's own check: capture reaches it without the API). */
export function assertNormalPath(field: string, p: string): void {
  const r = normalisePath(field, p);
  if (!r.ok) throw invalidArgument([r.violation]);
  if (r.path !== p) throw invalidArgument([{ field, reason: "INVALID_FORMAT", description: `must be normalised, got ${JSON.stringify(p)}` }]);
}

/**
 * The first parent directory of `p` (a normalised path) that is a symbolic link in `symlinks`
 * and not `deleted` (a workspace that deleted the link has a real directory there), or
 * undefined. A write or delete below a link would land where the link points. The path itself
 * being a link is not refused: a write replaces the link by a file, a delete removes the link,
 * and neither touches its target.
 */
export function symlinkOnPath(p: string, symlinks: ReadonlySet<string>, deleted: (link: string) => boolean = () => false): string | undefined {
  if (symlinks.size === 0) return undefined;
  for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) {
    const parent = p.slice(0, i);
    if (symlinks.has(parent) && !deleted(parent)) return parent;
  }
  return undefined;
}
