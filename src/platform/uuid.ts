/** The textual form of a UUID, as PostgreSQL's uuid type accepts it (any version, any case). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/** Where the dashes of a UUID's text are; every other character is a hex digit. */
const SHAPE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

/** The lowest and highest UUID (canonical lower-case text) that start with a prefix. */
export interface UuidBounds {
  readonly lowest: string;
  readonly highest: string;
}

/**
 * The UUIDs whose text starts with `prefix` (hex digits in any case, dashes where a UUID has
 * them), as the closed range [lowest, highest]: PostgreSQL orders uuid values as their text, so
 * `id BETWEEN lowest AND highest` finds them on the id's index. undefined when no UUID starts so.
 */
export function uuidPrefixBounds(prefix: string): UuidBounds | undefined {
  if (prefix.length === 0 || prefix.length > SHAPE.length) return undefined;
  const p = prefix.toLowerCase();
  for (let i = 0; i < p.length; i++) {
    if (SHAPE[i] === "-" ? p[i] !== "-" : !/^[0-9a-f]$/.test(p[i]!)) return undefined;
  }
  const rest = (digit: string) => SHAPE.slice(p.length).replace(/x/g, digit);
  return { lowest: p + rest("0"), highest: p + rest("f") };
}
