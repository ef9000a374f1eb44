/**
 * Repository-relative paths of the overlay. normalisePath collapses "." segments and repeated
 * slashes (and a trailing slash) and refuses what could escape the repository or confuse a
 * materialised checkout: absolute paths, ".." segments, backslashes, NUL and other control
 * characters, paths over 4096 bytes, and anything inside ".git" (a write there would run as a
 * git hook in the environments the turn scheduler materialises).
 */
import type { FieldViolation } from "../platform/errors.js";

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
  if (segments[0]!.toLowerCase() === ".git") return bad("GIT_DIRECTORY", "must not be inside .git");
  return { ok: true, path: segments.join("/") };
}
