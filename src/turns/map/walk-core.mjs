// @ts-check
/**
 * The workspace-map walk: skip rules, name sanitising, gitignore rules (by the `ignore`
 * package) and the synchronous tree walk itself.
 *
 * Why plain JavaScript: this module is loaded by the walk's dedicated worker thread
 * (walk-worker.mjs). A worker thread is a fresh Node isolate that does not inherit the
 * TypeScript loader of its parent — vitest transforms TS in its own module runner, and a
 * later build would not see a .ts worker entry either — so the worker entry and everything
 * it imports must be loadable by plain `node` (`ignore` is plain CommonJS from node_modules,
 * which an ES module imports as its default export). Types live in walk-core.d.mts; the main
 * thread imports the pure helpers (skipReason, sanitizeName, ...) from here as well, so the
 * rules exist once.
 *
 * Nothing in this module may be called on the request path except the pure, syscall-free
 * helpers (skipReason, sanitizeName, isOpaqueComponent, compileGitignore). walkTree does
 * filesystem calls and runs only in the worker (or in a benchmark/test).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import ignore from "ignore";
import { FILE, NAME_SEPARATOR, NOT_DESCENDED } from "./listing.mjs";

/** Directory names that are never descended into, wherever they appear. */
export const OPAQUE_COMPONENTS = Object.freeze([
  "Group Containers",
  "CloudStorage",
  "Mobile Documents",
  "FileProvider",
  ".Trash",
]);
const OPAQUE_SET = new Set(OPAQUE_COMPONENTS);

/**
 * Home-relative opaque trees. Only `<home>/Library` (macOS: app containers, File Provider
 * mounts). NOT AppData: on Windows the temp directory is `%USERPROFILE%\AppData\Local\Temp`,
 * so refusing AppData would refuse every scratch workspace (see the reference's third commit).
 */
export const HOME_RELATIVE_OPAQUE = Object.freeze(["Library"]);

/** @param {string} name */
export function isOpaqueComponent(name) {
  return OPAQUE_SET.has(name);
}

// ---------------------------------------------------------------------------------------
// Lexical path handling (no syscalls). Works on POSIX paths and on Windows-shaped paths
// (`C:\Users\x`, `C:/Users/x`, `\\server\share\x`) on any platform, so the Windows rules
// are testable on Linux.

const WIN_DRIVE = /^[A-Za-z]:(?:[\\/]|$)/;
const WIN_UNC = /^[\\/]{2}[^\\/]+[\\/][^\\/]+/;

/** @param {string} p */
function isWindowsShaped(p) {
  return WIN_DRIVE.test(p) || (p.startsWith("\\\\") && WIN_UNC.test(p));
}

/**
 * Splits a path into { prefix, parts, windows }: prefix is "/" (POSIX), "c:" (drive) or
 * "//server/share" (UNC); parts are the normalised components ("." and ".." resolved
 * lexically). Windows-shaped paths are lower-cased, since their comparison is
 * case-insensitive.
 * @param {string} p
 */
function splitLexical(p) {
  if (isWindowsShaped(p)) {
    let prefix;
    let rest;
    if (WIN_DRIVE.test(p)) {
      prefix = p.slice(0, 2).toLowerCase();
      rest = p.slice(2);
    } else {
      const m = /^[\\/]{2}([^\\/]+)[\\/]([^\\/]+)/.exec(p);
      prefix = m ? `//${m[1]}/${m[2]}`.toLowerCase() : "//";
      rest = m ? p.slice(m[0].length) : p.slice(2);
    }
    return { prefix, parts: normaliseParts(rest.toLowerCase().split(/[\\/]+/)), windows: true };
  }
  const abs = path.posix.isAbsolute(p) ? p : path.posix.resolve(p);
  return { prefix: "/", parts: normaliseParts(abs.split("/")), windows: false };
}

/** @param {string[]} raw */
function normaliseParts(raw) {
  /** @type {string[]} */
  const out = [];
  for (const part of raw) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return out;
}

/**
 * Why a directory gets no map at all, judged lexically (no filesystem call), or undefined.
 *  - "filesystem_root": `/`, a drive root (`C:\`), a UNC share root.
 *  - "home_directory": the home directory itself (a home directory is not a workspace).
 *  - "opaque_tree": inside Group Containers / CloudStorage / Mobile Documents / FileProvider
 *    / .Trash anywhere, or inside `<home>/Library`.
 * A project directory that merely *contains* or *is named* Library elsewhere is walkable,
 * and so is anything under AppData.
 * @param {string} dir
 * @param {string | undefined} home
 * @returns {"filesystem_root" | "home_directory" | "opaque_tree" | undefined}
 */
export function skipReason(dir, home) {
  const d = splitLexical(dir);
  if (d.parts.length === 0) return "filesystem_root";
  /** @type {ReturnType<typeof splitLexical> | undefined} */
  let h;
  if (home !== undefined && home !== "") {
    h = splitLexical(home);
    if (h.windows !== d.windows || h.prefix !== d.prefix) h = undefined;
  }
  if (h && h.parts.length > 0 && samePartsPrefix(d.parts, h.parts) && d.parts.length === h.parts.length) {
    return "home_directory";
  }
  // Opaque components are compared in their original case on POSIX; Windows-shaped paths
  // are already lower-cased, so compare those case-insensitively.
  const opaque = d.windows ? new Set(OPAQUE_COMPONENTS.map((c) => c.toLowerCase())) : OPAQUE_SET;
  if (d.parts.some((part) => opaque.has(part))) return "opaque_tree";
  if (h && h.parts.length > 0 && d.parts.length > h.parts.length && samePartsPrefix(d.parts, h.parts)) {
    const first = d.parts[h.parts.length];
    const rel = d.windows ? HOME_RELATIVE_OPAQUE.map((c) => c.toLowerCase()) : HOME_RELATIVE_OPAQUE;
    if (first !== undefined && rel.includes(first)) return "opaque_tree";
  }
  return undefined;
}

/**
 * @param {string[]} parts
 * @param {string[]} prefix
 */
function samePartsPrefix(parts, prefix) {
  if (prefix.length > parts.length) return false;
  for (let i = 0; i < prefix.length; i++) if (parts[i] !== prefix[i]) return false;
  return true;
}

// ---------------------------------------------------------------------------------------
// Name sanitising

export const DEFAULT_MAX_NAME_LENGTH = 100;

// C0 and C1 controls and DEL (\p{Cc}: U+0000-U+001F, U+007F-U+009F), the Unicode line/paragraph
// separators and the bidi overrides and isolates (which can make a name render as something else).
const UNSAFE = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;
const UNSAFE_TEST = /[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** @param {string} ch */
function escapeChar(ch) {
  switch (ch) {
    case "\n":
      return "\\n";
    case "\r":
      return "\\r";
    case "\t":
      return "\\t";
    default: {
      const code = ch.charCodeAt(0);
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
    }
  }
}

/**
 * A file name made safe to put on one line of a prompt: control characters (newlines
 * included) are escaped, and a name longer than maxLength code points is truncated with "…".
 * @param {string} name
 * @param {number} [maxLength]
 */
export function sanitizeName(name, maxLength = DEFAULT_MAX_NAME_LENGTH) {
  let out = UNSAFE_TEST.test(name) ? name.replace(UNSAFE, escapeChar) : name;
  if (out.length > maxLength) {
    const cps = Array.from(out);
    if (cps.length > maxLength) out = cps.slice(0, Math.max(1, maxLength - 1)).join("") + "…";
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// gitignore, by the `ignore` package (exact gitignore semantics, the matcher eslint and
// prettier use). One instance per .gitignore, tested with paths relative to the directory
// holding it, directories with a trailing "/". Case-sensitive, as git is on a case-sensitive
// filesystem (the package's default is case-insensitive). Not read: .git/info/exclude,
// core.excludesFile, .gitignore files above the walk's root.

/** @typedef {import("./walk-core.d.mts").GitignoreRuleSet} RuleSet */

const IGNORE_OPTIONS = Object.freeze({ ignorecase: false });

/**
 * @param {string} text contents of a .gitignore
 * @returns {import("ignore").Ignore}
 */
export function compileGitignore(text) {
  return ignore(IGNORE_OPTIONS).add(text);
}

/**
 * Whether relPath (relative to the walk root, "/"-separated) is ignored by the rule sets in
 * force (outermost first). Each set is asked about the path relative to its own directory,
 * outermost to innermost, and a deeper set's decision (ignored, or re-included by `!`)
 * overrides a shallower one's; within a file the last matching rule wins.
 *
 * Every ancestor of relPath must be a directory the walk descended into (not ignored): see
 * setsForSubtree for a directory one set excludes and a deeper one re-includes.
 * @param {readonly RuleSet[]} ruleSets
 * @param {string} relPath
 * @param {boolean} isDir
 */
export function isIgnored(ruleSets, relPath, isDir) {
  let ignored = false;
  for (const set of ruleSets) {
    const local = set.base === "" ? relPath : relPath.slice(set.base.length + 1);
    const verdict = set.rules.test(isDir ? local + "/" : local);
    if (verdict.ignored) ignored = true;
    else if (verdict.unignored) ignored = false;
  }
  return ignored;
}

/**
 * The rule sets for the subtree of relDir, a directory about to be descended into (so not
 * ignored overall). `ignore` answers for a path inside a directory one instance excludes
 * with that directory's verdict ("a file cannot be re-included if its parent is excluded"),
 * without reading its own rules. Git reads them: a deeper .gitignore's `!build/` re-includes
 * `build/`, and the shallower file's `*.log` still applies inside it. So a set that excludes
 * relDir is replaced, for this subtree only, by a copy whose last rule re-includes relDir
 * itself (an exact, anchored, escaped directory pattern, which matches nothing else).
 * Rare: it takes a re-included directory; otherwise the array is returned as is.
 * @param {readonly RuleSet[]} ruleSets
 * @param {string} relDir
 * @returns {readonly RuleSet[]}
 */
function setsForSubtree(ruleSets, relDir) {
  /** @type {RuleSet[] | undefined} */
  let out;
  for (let s = 0; s < ruleSets.length; s++) {
    const set = /** @type {RuleSet} */ (ruleSets[s]);
    const local = set.base === "" ? relDir : relDir.slice(set.base.length + 1);
    // Cached by the instance: isIgnored just asked the same question.
    if (!set.rules.test(local + "/").ignored) continue;
    out ??= ruleSets.slice();
    out[s] = { base: set.base, rules: ignore(IGNORE_OPTIONS).add(set.rules).add({ pattern: `!/${escapeGlob(local)}/` }) };
  }
  return out ?? ruleSets;
}

/**
 * A path as a gitignore pattern matching exactly that path: glob characters, backslashes and
 * spaces escaped (a name's trailing space would otherwise be trimmed).
 * @param {string} p
 */
function escapeGlob(p) {
  return p.replace(/[\\*?[\] ]/g, "\\$&");
}

// ---------------------------------------------------------------------------------------
// The walk

/**
 * The most of a .gitignore (or .gitattributes) read, here and by capture (src/turns/capture.ts,
 * which also lets git read no more): no real repository's rules come near it, and every path is
 * matched against every rule, so a file of hundreds of MB would cost its size in memory and time
 * on every walk.
 */
export const RULE_FILE_MAX_BYTES = 1024 * 1024;

/**
 * A .gitignore's text: opened without following a link and without blocking, read only when it
 * is a regular file of at most RULE_FILE_MAX_BYTES (throws otherwise), and only as many bytes as
 * its fstat said.
 * @param {string} file
 * @returns {string}
 */
function readRuleFile(file) {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > RULE_FILE_MAX_BYTES) throw new Error("not a regular file of at most 1 MiB");
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.toString("utf8", 0, got);
  } finally {
    closeSync(fd);
  }
}

/**
 * Walks `root` synchronously, breadth first (so a truncated map keeps the top of the tree),
 * and returns the kept entries packed (listing.mjs; listingEntries gives them in tree order,
 * siblings sorted by name). Must only run on a
 * dedicated thread: every call here can block for as long as the filesystem likes.
 *
 * @param {string} root
 * @param {import("./walk-core.d.mts").WalkOptions} options
 * @returns {import("./walk-core.d.mts").WalkOutcome}
 */
export function walkTree(root, options) {
  const maxDepth = options.maxDepth ?? 3;
  const maxEntries = options.maxEntries ?? 200;
  const maxNameLength = options.maxNameLength ?? DEFAULT_MAX_NAME_LENGTH;
  const home = options.home;

  let rootStat;
  try {
    rootStat = statSync(root);
  } catch (err) {
    return { kind: "error", code: errCode(err), message: `cannot stat the workspace root: ${errMessage(err)}` };
  }
  if (!rootStat.isDirectory()) return { kind: "error", code: "ENOTDIR", message: "the workspace root is not a directory" };

  // Canonicalise here, in the worker, never on the request path: a symlink to the home
  // directory (or into an opaque tree) is refused just like the real thing.
  let realRoot = root;
  try {
    realRoot = realpathSync.native(root);
  } catch {
    // keep the root as given
  }
  let realHome = home;
  if (home) {
    try {
      realHome = realpathSync.native(home);
    } catch {
      realHome = home;
    }
  }
  const reason = skipReason(root, home) ?? skipReason(realRoot, realHome) ?? (realHome !== home ? skipReason(realRoot, home) : undefined);
  if (reason) return { kind: "skipped", reason };

  const homeLibraries = new Set();
  if (realHome) for (const c of HOME_RELATIVE_OPAQUE) homeLibraries.add(path.join(realHome, c));
  if (home) for (const c of HOME_RELATIVE_OPAQUE) homeLibraries.add(path.join(home, c));

  const rootDev = rootStat.dev;

  // Flat, parallel arrays rather than a tree of objects, in the listing's shape (listing.mjs).
  // Kept entries, breadth first: each directory's names joined as soon as it is read (raw:
  // sanitised once, over the whole listing), and each entry's kind.
  /** @type {string[]} */ const chunks = [];
  /** @type {number[]} */ const entKind = [];
  let kept = 0;
  // Directories to read (the queue), by slot; slot 0 is the root:
  /** @type {string[]} */ const qAbs = [realRoot];
  /** @type {string[]} */ const qRel = [""];
  /** @type {number[]} */ const qDepth = [0];
  /** @type {(readonly RuleSet[])[]} */ const qRules = [EMPTY_RULES];
  /** @type {number[]} */ const kidCount = [0]; // kept children of a slot

  let total = 0;
  let unreadable = 0;
  let unreadableGitignores = 0;
  let prunedOpaque = 0;
  let prunedMounts = 0;
  let longName = false;

  for (let qi = 0; qi < qAbs.length; qi++) {
    const abs = /** @type {string} */ (qAbs[qi]);
    const rel = /** @type {string} */ (qRel[qi]);
    const depth = /** @type {number} */ (qDepth[qi]);
    let rules = /** @type {readonly RuleSet[]} */ (qRules[qi]);
    qRules[qi] = EMPTY_RULES;
    kidCount[qi] = 0;

    if (depth > 0) {
      // Never cross a mount point: compare st_dev with the root's. stat (not lstat): the
      // entry is already known to be a real directory, not a symlink.
      let st;
      try {
        st = statSync(abs);
      } catch {
        unreadable++;
        continue;
      }
      if (st.dev !== rootDev) {
        prunedMounts++;
        continue;
      }
    }

    let dirents;
    try {
      dirents = readdirSync(abs, { withFileTypes: true });
    } catch {
      unreadable++;
      continue;
    }

    // One pass finds the .gitignore and whether the names are already in order (libuv's
    // scandir sorts them on POSIX, so the sort below is usually skipped).
    let sorted = true;
    let prev = "";
    for (const d of dirents) {
      const name = d.name;
      if (name < prev) sorted = false;
      prev = name;
      if (name === ".gitignore" && !d.isDirectory()) {
        let text;
        try {
          // A link, FIFO, socket or device is not read (the directory may be an agent's: a FIFO
          // would block this thread for good), nor a file of more than RULE_FILE_MAX_BYTES.
          if (!d.isFile()) throw new Error("not a regular file");
          text = readRuleFile(abs + path.sep + ".gitignore");
        } catch {
          // Not fatal: the directory is walked without its rules (so the map may list what
          // they would hide), and the outcome counts it, as it counts unreadable directories.
          unreadableGitignores++;
        }
        if (text !== undefined) rules = rules.concat([{ base: rel, rules: compileGitignore(text) }]);
      }
    }
    if (!sorted) dirents.sort(byName);

    const descend = depth + 1 < maxDepth;
    /** @type {string[]} */ const keptNames = [];
    for (const d of dirents) {
      const name = d.name;
      if (name === ".git") continue;
      // The turn environment's marker (src/turns/environment.ts): Berth's, not the workspace's.
      if (depth === 0 && name === ".berth-env") continue;
      let isDir = d.isDirectory();
      if (!isDir && !d.isFile() && !d.isSymbolicLink() && !d.isFIFO() && !d.isSocket() && !d.isCharacterDevice() && !d.isBlockDevice()) {
        // DT_UNKNOWN (some filesystems): ask. lstat, so a symlink is never followed.
        try {
          isDir = lstatSync(abs + path.sep + name).isDirectory();
        } catch {
          isDir = false;
        }
      }
      // The relative path is only needed by gitignore rules and by directories to descend.
      const childRel = rules.length > 0 || isDir ? (rel === "" ? name : rel + "/" + name) : "";
      if (rules.length > 0 && isIgnored(rules, childRel, isDir)) continue;
      total++;
      const keep = kept < maxEntries;
      let kind = isDir ? NOT_DESCENDED : FILE; // or the queue slot of a directory to read
      if (isDir && descend) {
        const childAbs = abs + path.sep + name;
        if (isOpaqueComponent(name) || homeLibraries.has(childAbs)) {
          // Opaque trees are listed by name (read from their parent) but never opened.
          prunedOpaque++;
        } else {
          // Over the entry limit a directory is still read, to count ("showing N of M").
          kind = qAbs.length;
          qAbs.push(childAbs);
          qRel.push(childRel);
          qDepth.push(depth + 1);
          // One set alone cannot exclude a directory the walk descends into: only with two or
          // more can a deeper one have re-included it.
          qRules.push(rules.length > 1 ? setsForSubtree(rules, childRel) : rules);
        }
      }
      if (keep) {
        if (name.length > maxNameLength) longName = true;
        keptNames.push(name);
        entKind.push(kind);
        kept++;
      }
    }
    kidCount[qi] = keptNames.length;
    if (keptNames.length > 0) chunks.push(keptNames.join(NAME_SEPARATOR));
  }

  let names = chunks.join(NAME_SEPARATOR);
  // One scan of the joined names (the separator is safe) instead of one regex call per name;
  // only a listing with a control character or an over-long name pays for sanitising.
  if (longName || UNSAFE_TEST.test(names)) {
    names = names
      .split(NAME_SEPARATOR)
      .map((n) => sanitizeName(n, maxNameLength))
      .join(NAME_SEPARATOR);
  }
  const listing = { count: kept, names, kinds: Int32Array.from(entKind), kids: Uint32Array.from(kidCount) };

  return {
    kind: "ok",
    realRoot,
    listing,
    shown: listing.count,
    total,
    truncated: total > listing.count,
    unreadable,
    unreadableGitignores,
    prunedOpaque,
    prunedMounts,
  };
}

/** @type {readonly RuleSet[]} */
const EMPTY_RULES = Object.freeze([]);

/**
 * @param {import("node:fs").Dirent} a
 * @param {import("node:fs").Dirent} b
 */
function byName(a, b) {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** @param {unknown} err */
function errCode(err) {
  return typeof err === "object" && err !== null && "code" in err && typeof err.code === "string" ? err.code : "EUNKNOWN";
}

/** @param {unknown} err */
function errMessage(err) {
  return err instanceof Error ? err.message : String(err);
}
