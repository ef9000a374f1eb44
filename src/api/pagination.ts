/**
 * The one rule of every List RPC's pages (ListFiles, ListRepositories, ListSessions, ListTurns):
 * page_size 0 means the RPC's default, anything above its maximum is refused (never silently
 * capped), and a page token is the keyset of the last entry returned, opaque to the client.
 *
 * A token is base64url(JSON [list, ...key]): naming the list keeps one RPC from taking another's
 * token, and re-encoding the decoded value must give the token back, so a token is accepted only
 * in the one form this module writes (no two spellings of one position).
 */
import type { Check } from "./validate.js";

export interface PageRule {
  /** Names the list in its tokens, e.g. "sessions". */
  readonly list: string;
  /** page_size 0 means this. */
  readonly defaultSize: number;
  /** A larger page_size is INVALID_ARGUMENT. */
  readonly maxSize: number;
}

export type KeyPart = string | number;

export interface PageRequest {
  readonly size: number;
  /** The key of the last entry of the previous page; undefined on the first page. */
  readonly after: readonly KeyPart[] | undefined;
}

function encode(list: string, key: readonly KeyPart[]): string {
  return Buffer.from(JSON.stringify([list, ...key]), "utf8").toString("base64url");
}

/**
 * Reads page_size and page_token into `c` (violations name those fields). `shape` lists the type
 * of each key part: a token whose key does not match is refused like a forged one.
 */
export function readPage(c: Check, rule: PageRule, pageSize: number, pageToken: string, shape: readonly ("string" | "number")[]): PageRequest {
  const size = pageSize === 0 ? rule.defaultSize : c.range("page_size", pageSize, 1, rule.maxSize);
  if (pageToken === "") return { size, after: undefined };
  const after = decode(rule.list, pageToken, shape);
  if (after === undefined) c.add("page_token", "INVALID_PAGE_TOKEN", `not a next_page_token of this list (${rule.list})`);
  return { size, after };
}

function decode(list: string, token: string, shape: readonly ("string" | "number")[]): KeyPart[] | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== shape.length + 1 || value[0] !== list) return undefined;
  const key = value.slice(1) as unknown[];
  if (!key.every((k, i) => typeof k === shape[i] && (typeof k !== "number" || Number.isSafeInteger(k)))) return undefined;
  const parts = key as KeyPart[];
  return encode(list, parts) === token ? parts : undefined;
}

/**
 * One page out of `rows`, which the caller fetched with a limit of size + 1 (the extra row says
 * whether there is a next page): the page, and the token of its last entry when more follow.
 */
export function pageOf<T>(rule: PageRule, page: PageRequest, rows: readonly T[], keyOf: (row: T) => readonly KeyPart[]): { items: T[]; nextPageToken: string } {
  const items = rows.slice(0, page.size);
  const more = rows.length > page.size && items.length > 0;
  return { items, nextPageToken: more ? nextPageToken(rule, keyOf(items[items.length - 1]!)) : "" };
}

/** The token of the page after the entry with this key (for a domain call that says itself whether more follow). */
export function nextPageToken(rule: PageRule, key: readonly KeyPart[]): string {
  return encode(rule.list, key);
}
