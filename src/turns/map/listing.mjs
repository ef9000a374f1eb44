// @ts-check
/**
 * The kept entries of a walk, packed: what the walk's worker posts to the main thread. One
 * string of names and two typed arrays, not an object (or even a string) per entry, so the
 * message costs one string copy and two transferred buffers however large the tree; entries
 * become objects only when the map is built, and only the kept ones (BERTH_MAP_MAX_ENTRIES).
 *
 * Breadth first, as the walk reads: a directory's kept children are consecutive, and the
 * directories' blocks follow in the order the walk read them (its queue slots). The walk joins
 * each directory's names as soon as it has read it, so 50,000 names die young instead of
 * surviving every scavenge of the walk; tree order is made here, for the kept entries only.
 *  - names: sanitised names, joined by "/" — a character no file name holds on any platform,
 *    and one that sanitising never produces.
 *  - kinds: per entry, the queue slot of a directory the walk read (>= 0), NOT_DESCENDED for a
 *    directory it did not (depth limit, opaque tree), or FILE.
 *  - kids: per queue slot, how many of its children were kept (slot 0 is the root).
 *
 * Plain JavaScript for the same reason as walk-core.mjs: the worker imports it without a
 * TypeScript loader; types in listing.d.mts.
 */

export const NAME_SEPARATOR = "/";
export const NOT_DESCENDED = -1;
export const FILE = -2;

/**
 * The listing's entries as objects in tree order (depth first, siblings in the walk's order),
 * with "/"-separated paths relative to the root. Iterative: a deep tree cannot overflow the stack.
 * @param {import("./listing.d.mts").Listing} listing
 * @returns {import("./listing.d.mts").ListedEntry[]}
 */
export function listingEntries(listing) {
  const { count, kinds, kids } = listing;
  /** @type {import("./listing.d.mts").ListedEntry[]} */
  const out = [];
  if (count === 0) return out;
  const names = listing.names.split(NAME_SEPARATOR);
  const start = new Uint32Array(kids.length); // first kept child of each slot (entry index)
  for (let s = 0, at = 0; s < kids.length; s++) {
    start[s] = at;
    at += /** @type {number} */ (kids[s]);
  }
  /** @type {number[]} */ const stackPos = [0];
  /** @type {number[]} */ const stackEnd = [/** @type {number} */ (kids[0])];
  /** @type {string[]} */ const stackPrefix = [""];
  while (stackPos.length > 0) {
    const top = stackPos.length - 1;
    const pos = /** @type {number} */ (stackPos[top]);
    if (pos >= /** @type {number} */ (stackEnd[top])) {
      stackPos.pop();
      stackEnd.pop();
      stackPrefix.pop();
      continue;
    }
    stackPos[top] = pos + 1;
    const kind = /** @type {number} */ (kinds[pos]);
    const p = stackPrefix[top] + /** @type {string} */ (names[pos]);
    out.push({ path: p, isDir: kind !== FILE });
    if (kind >= 0 && /** @type {number} */ (kids[kind]) > 0) {
      const first = /** @type {number} */ (start[kind]);
      stackPos.push(first);
      stackEnd.push(first + /** @type {number} */ (kids[kind]));
      stackPrefix.push(p + NAME_SEPARATOR);
    }
  }
  return out;
}
