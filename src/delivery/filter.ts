/**
 * Subscriber filters, compiled once per subscription so that fan-out costs a few Set lookups
 * per subscriber and event.
 *
 * Kind patterns: exact ("session.stranded"), prefix ("session.*": every kind starting with
 * "session."), suffix ("*.stranded": every kind ending with ".stranded"), or "*" (all).
 */
import type { FieldViolation } from "../platform/errors.js";
import type { Event } from "./event-store.js";

export interface EventFilter {
  /** Only these repositories (lower-case UUIDs); empty or undefined for all. */
  readonly repoIds?: readonly string[] | undefined;
  /** Only kinds matching one of these patterns; empty or undefined for all. */
  readonly kinds?: readonly string[] | undefined;
  /** Only events of these sessions (e.g. AttachSession's own); empty or undefined for all. */
  readonly sessionIds?: readonly string[] | undefined;
  /** Leave out the events of this session. */
  readonly excludeSessionId?: string | undefined;
}

const SEGMENT = "[a-z][a-z0-9_]*";
const EXACT = new RegExp(`^${SEGMENT}(\\.${SEGMENT})*$`);
const PREFIX = new RegExp(`^(${SEGMENT}(\\.${SEGMENT})*)\\.\\*$`);
const SUFFIX = new RegExp(`^\\*\\.(${SEGMENT}(\\.${SEGMENT})*)$`);
export const MAX_KIND_PATTERNS = 64;

/** Violations of a kinds[] list, named kinds[i]. */
export function kindPatternViolations(kinds: readonly string[]): FieldViolation[] {
  const out: FieldViolation[] = [];
  if (kinds.length > MAX_KIND_PATTERNS) {
    out.push({ field: "kinds", reason: "TOO_MANY", description: `at most ${MAX_KIND_PATTERNS} patterns, got ${kinds.length}` });
  }
  kinds.forEach((k, i) => {
    if (k === "*" || (k.length <= 128 && (EXACT.test(k) || PREFIX.test(k) || SUFFIX.test(k)))) return;
    out.push({
      field: `kinds[${i}]`,
      reason: "INVALID_KIND_PATTERN",
      description: `"${k.slice(0, 64)}" is not a kind pattern: use an exact kind ("session.stranded"), a prefix ("session.*") or a suffix ("*.stranded")`,
    });
  });
  return out;
}

export type Matcher = (event: Event) => boolean;

/** Compiles a (validated) filter into a predicate. */
export function compileFilter(filter: EventFilter): Matcher {
  const repos = filter.repoIds && filter.repoIds.length > 0 ? new Set(filter.repoIds) : undefined;
  const sessions = filter.sessionIds && filter.sessionIds.length > 0 ? new Set(filter.sessionIds) : undefined;
  const exclude = filter.excludeSessionId || undefined;
  let exact: Set<string> | undefined;
  let prefixes: string[] | undefined;
  let suffixes: string[] | undefined;
  let allKinds = !filter.kinds || filter.kinds.length === 0;
  for (const k of filter.kinds ?? []) {
    if (k === "*") allKinds = true;
    else if (k.endsWith(".*")) (prefixes ??= []).push(k.slice(0, -1)); // "session."
    else if (k.startsWith("*.")) (suffixes ??= []).push(k.slice(1)); // ".stranded"
    else (exact ??= new Set()).add(k);
  }
  const kindOk = (kind: string): boolean => {
    if (allKinds || exact?.has(kind)) return true;
    if (prefixes) for (const p of prefixes) if (kind.startsWith(p)) return true;
    if (suffixes) for (const s of suffixes) if (kind.endsWith(s)) return true;
    return false;
  };
  return (e) =>
    (repos === undefined || repos.has(e.repoId)) &&
    (sessions === undefined || sessions.has(e.sessionId)) &&
    (exclude === undefined || e.sessionId !== exclude) &&
    kindOk(e.kind);
}
