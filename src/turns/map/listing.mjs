// @ts-check
/**
 * The kept entries of a walk, packed: what the walk's worker posts to the main thread. One
 * string of names and one typed array, not an object (or even a string) per entry, so the
 * message costs one string copy and one transferred buffer however large the tree; entries
 * become objects only when the map is built, and only the kept ones (BERTH_MAP_MAX_ENTRIES).
 *
 *  - names: the entries' sanitised names in tree order, joined by "/" — a character no file
 *    name holds on any platform, and one that sanitising never produces.
 *  - meta: per entry, (level << 1) | isDir, where level 0 is a child of the root. An entry's
 *    path is its name under the nearest directory before it one level up (tree order).
 *
 * Plain JavaScript for the same reason as walk-core.mjs: the worker imports it without a
 * TypeScript loader; types in listing.d.mts.
 */

export const NAME_SEPARATOR = "/";

/**
 * @param {number} level
 * @param {boolean} isDir
 */
export function packMeta(level, isDir) {
  return (level << 1) | (isDir ? 1 : 0);
}

/**
 * The listing's entries as objects, in tree order, with "/"-separated paths relative to the root.
 * @param {import("./listing.d.mts").Listing} listing
 * @returns {import("./listing.d.mts").ListedEntry[]}
 */
export function listingEntries(listing) {
  const { count, names, meta } = listing;
  /** @type {import("./listing.d.mts").ListedEntry[]} */
  const out = [];
  /** @type {string[]} */
  const prefixAt = [""]; // prefixAt[level]: the path of the last directory one level up, plus "/"
  let start = 0;
  for (let i = 0; i < count; i++) {
    let end = names.indexOf(NAME_SEPARATOR, start);
    if (end === -1) end = names.length;
    const m = /** @type {number} */ (meta[i]);
    const level = m >>> 1;
    const isDir = (m & 1) === 1;
    const p = level === 0 ? names.slice(start, end) : prefixAt[level] + names.slice(start, end);
    start = end + 1;
    if (isDir) prefixAt[level + 1] = p + NAME_SEPARATOR;
    out.push({ path: p, isDir });
  }
  return out;
}
