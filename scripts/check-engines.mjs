#!/usr/bin/env node
/**
 * Fails when an installed package (direct or transitive) declares an `engines.node` range that the
 * running Node does not satisfy, and prints each offender. Run by CI right after `npm ci`;
 * `.npmrc`'s engine-strict makes npm refuse such an install too, this is the check that names them.
 *
 *   node scripts/check-engines.mjs                 # node_modules of the repository, process.version
 *   node scripts/check-engines.mjs --root DIR --node 20.20.2
 *
 * It walks DIR/node_modules/** /package.json (scoped and nested node_modules included) rather
 * than the lockfile, so it judges what is actually installed. The `semver` package is not in the
 * tree, so ranges are matched here with node-semver's grammar (`||`, space-separated comparators,
 * `<`, `<=`, `>`, `>=`, `=`, x-ranges, `~`, `^`, hyphen ranges), prereleases compared as npm's
 * engine check does (includePrerelease). A range it cannot parse counts as an offender, as it does
 * for npm, so the check never passes by not understanding.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// --- versions --------------------------------------------------------------------------------

const NUM = "0|[1-9]\\d*";
const PRE_ID = "(?:0|[1-9]\\d*|\\d*[a-zA-Z-][a-zA-Z0-9-]*)";
const VERSION_RE = new RegExp(
  `^v?(${NUM})\\.(${NUM})\\.(${NUM})(?:-(${PRE_ID}(?:\\.${PRE_ID})*))?(?:\\+[0-9A-Za-z.-]+)?$`,
);
// A partial version: each part a number or x/X/*, trailing parts optional.
const XR = `${NUM}|x|X|\\*`;
const PARTIAL_RE = new RegExp(
  `^v?(${XR})(?:\\.(${XR})(?:\\.(${XR})(?:-(${PRE_ID}(?:\\.${PRE_ID})*))?(?:\\+[0-9A-Za-z.-]+)?)?)?$`,
);

/** @typedef {{ major: number, minor: number, patch: number, pre: (string|number)[] }} Version */

/** @param {string} s @returns {Version | null} */
export function parseVersion(s) {
  const m = VERSION_RE.exec(s.trim());
  if (!m) return null;
  return {
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: Number(m[3]),
    pre: m[4] ? m[4].split(".").map((id) => (/^\d+$/.test(id) ? Number(id) : id)) : [],
  };
}

/** Semver precedence. @param {Version} a @param {Version} b */
function compare(a, b) {
  for (const k of /** @type {const} */ (["major", "minor", "patch"])) {
    if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  }
  if (a.pre.length === 0 || b.pre.length === 0) {
    return a.pre.length === b.pre.length ? 0 : a.pre.length === 0 ? 1 : -1;
  }
  for (let i = 0; i < Math.max(a.pre.length, b.pre.length); i++) {
    const x = a.pre[i];
    const y = b.pre[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (x === y) continue;
    if (typeof x === "number" && typeof y === "number") return x < y ? -1 : 1;
    if (typeof x === "number") return -1;
    if (typeof y === "number") return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

// --- ranges ----------------------------------------------------------------------------------

/** @typedef {{ op: "<" | "<=" | ">" | ">=" | "=", v: Version }} Comparator */

/** @param {number} major @param {number} minor @param {number} patch @param {(string|number)[]} [pre] */
const v = (major, minor, patch, pre = []) => ({ major, minor, patch, pre });
/** Nothing satisfies this (a range like `<*` or `>*`). */
const NONE = /** @type {Comparator} */ ({ op: "<", v: v(0, 0, 0, [0]) });

/**
 * @param {string} s
 * @returns {{ major: number | null, minor: number | null, patch: number | null, pre: (string|number)[] } | null}
 */
function parsePartial(s) {
  const m = PARTIAL_RE.exec(s);
  if (!m) return null;
  const part = (/** @type {string | undefined} */ p) =>
    p === undefined || p === "x" || p === "X" || p === "*" ? null : Number(p);
  const major = part(m[1]);
  const minor = part(m[2]);
  const patch = part(m[3]);
  // A number after a wildcard (`x.1`, `1.*.2`) is no range.
  if ((major === null && (m[2] !== undefined && minor !== null)) || (minor === null && m[3] !== undefined && patch !== null)) {
    return null;
  }
  const pre = patch !== null && m[4] ? m[4].split(".").map((id) => (/^\d+$/.test(id) ? Number(id) : id)) : [];
  return { major, minor, patch, pre };
}

/**
 * One simple term (`>=20`, `^1.2`, `~3`, `1.x`, `*`) as comparators, all of which must hold.
 * @param {string} term @returns {Comparator[] | null}
 */
function desugar(term) {
  const m = /^(~>?|\^|<=|>=|<|>|=)?(.*)$/.exec(term);
  if (!m) return null;
  const op = m[1] ?? "";
  const p = parsePartial(m[2] ?? "");
  if (!p) return null;
  const { major, minor, patch, pre } = p;
  // A lower bound filled in with zeros starts at the lowest prerelease (-0), as node-semver's
  // includePrerelease does; a given patch keeps its own prerelease.
  const low = () => (patch === null ? v(major ?? 0, minor ?? 0, 0, [0]) : v(major ?? 0, minor ?? 0, patch, pre));
  if (op === "^") {
    if (major === null) return [];
    const lo = low();
    let hi;
    if (major > 0 || minor === null) hi = v(major + 1, 0, 0, [0]);
    else if (minor > 0 || patch === null) hi = v(0, minor + 1, 0, [0]);
    else hi = v(0, 0, patch + 1, [0]);
    return [{ op: ">=", v: lo }, { op: "<", v: hi }];
  }
  if (op === "~" || op === "~>") {
    if (major === null) return [];
    const lo = low();
    const hi = minor === null ? v(major + 1, 0, 0, [0]) : v(major, minor + 1, 0, [0]);
    return [{ op: ">=", v: lo }, { op: "<", v: hi }];
  }
  if (patch !== null) {
    return [{ op: op === "" ? "=" : /** @type {Comparator["op"]} */ (op), v: low() }];
  }
  // An x-range: some parts missing.
  if (major === null) return op === "<" || op === ">" ? [NONE] : [];
  const lo = low();
  const next = minor === null ? v(major + 1, 0, 0, [0]) : v(major, minor + 1, 0, [0]);
  switch (op) {
    case "":
    case "=":
      return [{ op: ">=", v: lo }, { op: "<", v: next }];
    case ">":
    case ">=":
      return [{ op: ">=", v: op === ">" ? next : lo }];
    case "<":
      return [{ op: "<", v: lo }];
    case "<=":
      return [{ op: "<", v: next }];
  }
  return null;
}

/**
 * A range as a set of alternatives (`||`), each a list of comparators that must all hold; null
 * when it is not a valid range.
 * @param {string} range @returns {Comparator[][] | null}
 */
export function parseRange(range) {
  /** @type {Comparator[][]} */
  const sets = [];
  for (const alt of range.split("||")) {
    // As node-semver does: no space between an operator and its version (">= 18.x").
    const s = alt.trim().replace(/(<=|>=|<|>|=|~>?|\^)\s+/g, "$1");
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(s);
    if (hyphen) {
      const a = parsePartial(hyphen[1] ?? "");
      const b = parsePartial(hyphen[2] ?? "");
      if (!a || !b) return null;
      /** @type {Comparator[]} */
      const set = [];
      // node-semver's hyphenReplace with includePrerelease: `1.2.3 - 2.3.4` is >=1.2.3-0 <2.3.5-0.
      if (a.major !== null) {
        const pre = a.patch !== null && a.pre.length > 0 ? a.pre : [0];
        set.push({ op: ">=", v: v(a.major, a.minor ?? 0, a.patch ?? 0, pre) });
      }
      if (b.major !== null) {
        if (b.minor === null) set.push({ op: "<", v: v(b.major + 1, 0, 0, [0]) });
        else if (b.patch === null) set.push({ op: "<", v: v(b.major, b.minor + 1, 0, [0]) });
        else if (b.pre.length > 0) set.push({ op: "<=", v: v(b.major, b.minor, b.patch, b.pre) });
        else set.push({ op: "<", v: v(b.major, b.minor, b.patch + 1, [0]) });
      }
      sets.push(set);
      continue;
    }
    /** @type {Comparator[]} */
    const set = [];
    for (const term of s === "" ? [] : s.split(/\s+/)) {
      const cs = desugar(term);
      if (!cs) return null;
      set.push(...cs);
    }
    sets.push(set);
  }
  return sets;
}

/** @param {Version} version @param {Comparator} c */
function holds(version, c) {
  const d = compare(version, c.v);
  switch (c.op) {
    case "<":
      return d < 0;
    case "<=":
      return d <= 0;
    case ">":
      return d > 0;
    case ">=":
      return d >= 0;
    case "=":
      return d === 0;
  }
}

/**
 * Whether `version` satisfies `range`; null when the range cannot be parsed.
 * @param {string} version @param {string} range @returns {boolean | null}
 */
export function satisfies(version, range) {
  const ver = parseVersion(version);
  const sets = parseRange(range);
  if (!ver || !sets) return null;
  return sets.some((set) => set.every((c) => holds(ver, c)));
}

// --- the installed tree ----------------------------------------------------------------------

/**
 * Every package.json under dir/node_modules, nested node_modules included.
 * @param {string} dir @returns {string[]}
 */
function packageDirs(dir) {
  const nm = path.join(dir, "node_modules");
  /** @type {string[]} */
  const out = [];
  /** @param {string} d */
  const entries = (d) => {
    try {
      return readdirSync(d, { withFileTypes: true });
    } catch {
      return [];
    }
  };
  for (const e of entries(nm)) {
    if (e.name.startsWith(".") || !(e.isDirectory() || e.isSymbolicLink())) continue;
    const names = e.name.startsWith("@")
      ? entries(path.join(nm, e.name))
          .filter((s) => s.isDirectory() || s.isSymbolicLink())
          .map((s) => path.join(e.name, s.name))
      : [e.name];
    for (const name of names) {
      const pkgDir = path.join(nm, name);
      out.push(pkgDir);
      // Symlinked packages (workspaces) are not descended into: their tree is elsewhere.
      if (!e.isSymbolicLink()) out.push(...packageDirs(pkgDir));
    }
  }
  return out;
}

/**
 * @param {string} root @param {string} nodeVersion
 * @returns {{ checked: number, offenders: { name: string, version: string, range: unknown, where: string, reason: string }[] }}
 */
export function findOffenders(root, nodeVersion) {
  const offenders = [];
  let checked = 0;
  for (const dir of packageDirs(root)) {
    let pkg;
    try {
      pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    } catch {
      continue; // not a package (a bare folder of a scope, a leftover)
    }
    checked++;
    const range = pkg?.engines?.node;
    if (range === undefined) continue;
    const ok = typeof range === "string" ? satisfies(nodeVersion, range) : null;
    if (ok === true) continue;
    offenders.push({
      name: String(pkg.name ?? path.basename(dir)),
      version: String(pkg.version ?? "?"),
      range,
      where: path.relative(root, dir),
      reason: ok === false ? "excludes" : "cannot parse",
    });
  }
  return { checked, offenders };
}

function main() {
  const args = process.argv.slice(2);
  const opt = (/** @type {string} */ name) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const root = path.resolve(opt("--root") ?? path.join(path.dirname(fileURLToPath(import.meta.url)), ".."));
  const nodeVersion = opt("--node") ?? process.version;
  if (!parseVersion(nodeVersion)) {
    console.error(`check-engines: not a version: ${nodeVersion}`);
    process.exit(2);
  }
  const { checked, offenders } = findOffenders(root, nodeVersion);
  if (checked === 0) {
    console.error(`check-engines: no installed package under ${path.join(root, "node_modules")}`);
    process.exit(2);
  }
  if (offenders.length === 0) {
    console.log(`check-engines: all ${checked} installed packages admit Node ${nodeVersion}`);
    return;
  }
  console.error(`check-engines: ${offenders.length} installed package(s) do not admit Node ${nodeVersion}:`);
  for (const o of offenders) {
    console.error(`  ${o.name}@${o.version}  engines.node ${JSON.stringify(o.range)} (${o.reason})  ${o.where}`);
  }
  process.exit(1);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
