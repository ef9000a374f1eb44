/**
 * Symbol extraction for the workspace overlay.
 *
 * `extractSymbols` parses a file with tree-sitter (WASM grammars from
 * `@vscode/tree-sitter-wasm`) and lists its symbols with qualified names and a
 * hash of each symbol's own text; `diffSymbols` compares two versions of a file
 * and says which symbols were added, modified (hash changed) or deleted.
 *
 * ## Whole-file unit
 * Both functions return `null` when the file cannot be split into symbols:
 * - the extension has no grammar (see {@link languageForPath}),
 * - the content is larger than `maxBytes` (default 2 MiB),
 * - parsing and walking the tree took longer than `timeoutMs` (default
 *   200 ms; the parse is cancelled through tree-sitter's progress callback),
 * - the runtime/grammar failed to load or parsing threw.
 * `null` means: *treat the whole file as one unit named by its path*.
 * {@link diffSymbolsOrFile} does exactly that for the caller: it never returns
 * `null` and yields `[{ name: path, kind: "file", change }]` in that case.
 * None of the functions ever throws for any content.
 *
 * ## Naming rules
 * Names are qualified with their containers, joined by `.`:
 * - TS/JS: functions, generator functions, classes (also `export default class`
 *   → `default` when anonymous), methods `Class.method` (also getters/setters,
 *   `#private`, arrow-function class fields), interfaces, type aliases, enums,
 *   namespaces/modules (`NS.f`; `declare module "m"` → `m`), top-level
 *   `const`/`let`/`var` declarators (`const f = () => …` / `function` values
 *   → kind `function`, class values → `class`, anything else → `const` or
 *   `variable`). Overload signatures are folded into the declaration that
 *   follows them (one symbol spanning all signatures and the implementation).
 * - Python: `def` → function (method inside a class), `class`, nested classes
 *   `A.B.f`; decorators belong to the definition. Functions' bodies are not
 *   searched (a nested `def` is part of its enclosing function).
 * - Go: functions, methods named `Receiver.Method` (`func (s *Server[T]) Start`
 *   → `Server.Start`), types (`struct`, `interface`, other → `type`), top-level
 *   `const` and `var` names.
 * - Rust: `fn` (method inside `impl`/`trait`), `struct`, `enum`, `union`,
 *   `trait` (`Trait.method`), `type`, `const`/`static`, `macro_rules!`, `mod`
 *   nesting (`m.n.f`); `impl Foo { fn bar }` and `impl Trait for Foo { fn bar }`
 *   both give `Foo.bar`, and the impl block itself is a symbol named
 *   `impl Foo` / `impl Trait for Foo`. Preceding `#[…]` attributes belong to
 *   their item.
 * - Java: classes, records, interfaces, enums, annotation types, nested types,
 *   methods and constructors (`A.A`).
 * - Duplicates (Go `init`, Python property getter/setter, TS `get x`/`set x`,
 *   Java overloads, two `impl From<…> for Foo` with `Foo.from`): the first
 *   occurrence in document order keeps the name, later ones get `#2`, `#3`, ….
 *
 * ## Hash
 * sha256 (hex) of the symbol's own text with CRLF → LF, trailing whitespace of
 * every line stripped and blank lines dropped. Nested symbols are cut out of
 * their container's text: editing a method modifies only the method; editing
 * a class's fields or heritage modifies the class. Adding/removing a method
 * does not modify its class. Moving symbols around changes nothing. Text that
 * belongs to no symbol (imports, top-level statements) is not tracked.
 */
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { collectSymbols, type RawSymbol } from "./extractors.js";
import { parserFor } from "./runtime.js";
import type { ExtractOptions, SymbolChange, SymbolDef, SymbolLanguage } from "./types.js";
import type { Edit, Tree } from "@vscode/tree-sitter-wasm";

export type {
  ExtractOptions,
  SymbolChange,
  SymbolChangeKind,
  SymbolDef,
  SymbolKind,
  SymbolLanguage,
} from "./types.js";

export const DEFAULT_MAX_SYMBOL_BYTES = 2 * 1024 * 1024;
export const DEFAULT_PARSE_TIMEOUT_MS = 200;

const EXTENSIONS: Record<string, SymbolLanguage> = {
  ts: "typescript",
  mts: "typescript",
  cts: "typescript",
  tsx: "tsx",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascript",
  py: "python",
  pyi: "python",
  go: "go",
  rs: "rust",
  java: "java",
};

/** The grammar used for `path` (by extension, case-insensitive), or `undefined`: whole-file unit. */
export function languageForPath(path: string): SymbolLanguage | undefined {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) return undefined;
  return EXTENSIONS[base.slice(dot + 1).toLowerCase()];
}

const ALL_LANGUAGES: readonly SymbolLanguage[] = ["typescript", "tsx", "javascript", "python", "go", "rust", "java"];

/**
 * Loads the runtime and grammars ahead of the first write (each costs a few
 * hundred ms once). Optional: everything loads lazily otherwise. Never throws;
 * resolves to the languages that failed to load.
 */
export async function preloadSymbolGrammars(
  languages: readonly SymbolLanguage[] = ALL_LANGUAGES,
): Promise<SymbolLanguage[]> {
  const results = await Promise.allSettled(languages.map((l) => parserFor(l)));
  return languages.filter((_, i) => results[i]?.status === "rejected");
}

/** Normalisation applied before hashing (see the module comment). */
export function normaliseSymbolText(text: string): string {
  const lines = text.split(/\r\n|\r|\n/);
  const kept: string[] = [];
  for (const line of lines) {
    const trimmed = line.trimEnd();
    if (trimmed !== "") kept.push(trimmed);
  }
  return kept.join("\n");
}

function hashText(text: string): string {
  return createHash("sha256").update(normaliseSymbolText(text)).digest("hex");
}

/** Folds TS overload signatures into the next sibling with the same name. */
function foldOverloads(list: RawSymbol[]): RawSymbol[] {
  const out: RawSymbol[] = [];
  let carry: RawSymbol | null = null;
  for (const s of list) {
    if (carry) {
      if (carry.name === s.name) {
        s.start = carry.start;
        s.startRow = carry.startRow;
        s.children = [...carry.children, ...s.children];
      } else {
        out.push(carry);
      }
      carry = null;
    }
    if (s.overload) carry = s;
    else out.push(s);
  }
  if (carry) out.push(carry);
  for (const s of out) s.children = foldOverloads(s.children);
  return out;
}

/** The symbol's text with its nested symbols cut out. */
function ownText(src: string, sym: RawSymbol): string {
  if (sym.children.length === 0) return src.slice(sym.start, sym.end);
  let text = "";
  let pos = sym.start;
  for (const child of sym.children) {
    if (child.start >= pos) text += src.slice(pos, child.start) + "\n";
    pos = Math.max(pos, child.end);
  }
  return text + src.slice(Math.min(pos, sym.end), sym.end);
}

function finalise(src: string, roots: RawSymbol[]): SymbolDef[] {
  const out: SymbolDef[] = [];
  const seen = new Map<string, number>();
  const visit = (list: RawSymbol[]): void => {
    for (const s of list) {
      const n = (seen.get(s.name) ?? 0) + 1;
      seen.set(s.name, n);
      const endRow = s.endColumn === 0 && s.endRow > s.startRow ? s.endRow - 1 : s.endRow;
      out.push({
        name: n === 1 ? s.name : `${s.name}#${n}`,
        kind: s.kind,
        startLine: s.startRow + 1,
        endLine: endRow + 1,
        hash: hashText(ownText(src, s)),
      });
      visit(s.children);
    }
  };
  visit(foldOverloads(roots));
  return out;
}

/**
 * Results by language and content hash. On the WriteFile path the old content
 * of a diff is usually the new content of the previous write, so a diff costs
 * one parse instead of two.
 */
const CACHE_ENTRIES = 256;
const cache = new Map<string, SymbolDef[]>();

/**
 * The last syntax tree of each recently parsed path, with the key of the content it was parsed
 * from, so the next version of the file is parsed incrementally: the old tree, edited with the one
 * changed range (common prefix and suffix), lets tree-sitter reuse every unchanged subtree. Kept
 * per path (not per content: the 32 most recent contents would miss as soon as more files than
 * that are written in turn). Bounded in paths and in the total size of the content the trees were
 * parsed from (WASM memory); an evicted or replaced tree is deleted.
 */
const TREE_ENTRIES = 1024;
const TREE_MAX_CHARS = 256 * 1024;
const TREE_BUDGET_CHARS = 4 * 1024 * 1024;
const trees = new Map<string, { key: string; tree: Tree; chars: number }>();
let treeChars = 0;

function dropTree(path: string): void {
  const old = trees.get(path);
  if (!old) return;
  trees.delete(path);
  treeChars -= old.chars;
  old.tree.delete();
}

function keepTree(path: string, key: string, tree: Tree, chars: number): boolean {
  dropTree(path);
  if (chars > TREE_MAX_CHARS) return false;
  trees.set(path, { key, tree, chars });
  treeChars += chars;
  while (trees.size > TREE_ENTRIES || treeChars > TREE_BUDGET_CHARS) dropTree(trees.keys().next().value!);
  return true;
}

function pointAt(text: string, index: number): { row: number; column: number } {
  let row = 0;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) {
    row++;
    lineStart = i + 1;
  }
  return { row, column: index - lineStart };
}

/** The single edit turning `prev` into `next` (indices and columns in UTF-16 code units, as web-tree-sitter counts). */
export function editBetween(prev: string, next: string): Edit {
  const max = Math.min(prev.length, next.length);
  let start = 0;
  while (start < max && prev.charCodeAt(start) === next.charCodeAt(start)) start++;
  let suffix = 0;
  while (suffix < max - start && prev.charCodeAt(prev.length - 1 - suffix) === next.charCodeAt(next.length - 1 - suffix)) suffix++;
  const oldEnd = prev.length - suffix;
  const newEnd = next.length - suffix;
  return {
    startIndex: start,
    oldEndIndex: oldEnd,
    newEndIndex: newEnd,
    startPosition: pointAt(prev, start),
    oldEndPosition: pointAt(prev, oldEnd),
    newEndPosition: pointAt(next, newEnd),
  };
}

/**
 * The symbols of `content` in document order (containers before their
 * members), or `null` when the file is a whole-file unit. Never throws.
 */
export async function extractSymbols(
  path: string,
  content: string,
  options: ExtractOptions = {},
  previous?: string,
): Promise<SymbolDef[] | null> {
  const lang = languageForPath(path);
  if (!lang) return null;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_SYMBOL_BYTES;
  // UTF-8 length >= UTF-16 length, and <= 3x it.
  if (content.length > maxBytes) return null;
  if (content.length * 3 > maxBytes && Buffer.byteLength(content, "utf8") > maxBytes) return null;
  const keyOf = (text: string): string => `${lang}:${createHash("sha256").update(text).digest("hex")}`;
  const key = keyOf(content);
  const cached = cache.get(key);
  if (cached) {
    // LRU: move to the most recent position.
    cache.delete(key);
    cache.set(key, cached);
    return cached.map((s) => ({ ...s }));
  }
  try {
    const parser = await parserFor(lang);
    const deadline = performance.now() + (options.timeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS);
    // Everything below is synchronous: no other caller can use this parser meanwhile.
    // Incremental when the previous version's tree is at hand: an edited copy of it.
    const entry = previous !== undefined ? trees.get(path) : undefined;
    let old: Tree | null = null;
    if (entry && previous !== undefined && entry.key === keyOf(previous)) {
      old = entry.tree.copy();
      old.edit(editBetween(previous, content));
    }
    let tree: Tree | null;
    try {
      tree = parser.parse(content, old, {
        // Returning true cancels the parse (the typings say void; the runtime honours true).
        progressCallback: () => performance.now() > deadline,
      });
    } finally {
      old?.delete();
    }
    if (!tree) {
      parser.reset();
      return null;
    }
    let kept = false;
    try {
      const symbols = finalise(content, collectSymbols(lang, tree.rootNode, deadline));
      cache.set(key, symbols);
      if (cache.size > CACHE_ENTRIES) {
        const oldest = cache.keys().next();
        if (!oldest.done) cache.delete(oldest.value);
      }
      kept = keepTree(path, key, tree, content.length);
      return symbols.map((s) => ({ ...s }));
    } finally {
      if (!kept) tree.delete();
    }
  } catch {
    return null;
  }
}

/**
 * Compares two symbol lists by name: added and modified in the order of `next`,
 * then deleted in the order of `prev`. Unchanged symbols are omitted.
 */
export function compareSymbols(prev: readonly SymbolDef[], next: readonly SymbolDef[]): SymbolChange[] {
  const before = new Map(prev.map((s) => [s.name, s]));
  const after = new Set(next.map((s) => s.name));
  const changes: SymbolChange[] = [];
  for (const s of next) {
    const old = before.get(s.name);
    if (!old) changes.push({ name: s.name, kind: s.kind, change: "added" });
    else if (old.hash !== s.hash) changes.push({ name: s.name, kind: s.kind, change: "modified" });
  }
  for (const s of prev) {
    if (!after.has(s.name)) changes.push({ name: s.name, kind: s.kind, change: "deleted" });
  }
  return changes;
}

/**
 * The symbols that a change of `path` from `oldContent` to `newContent` adds,
 * modifies or deletes. `undefined` content means the file does not exist on
 * that side (creation: everything added; deletion: everything deleted).
 * Returns `null` when either side is a whole-file unit (see the module comment).
 * Never throws.
 */
export async function diffSymbols(
  path: string,
  oldContent: string | undefined,
  newContent: string | undefined,
  options: ExtractOptions = {},
): Promise<SymbolChange[] | null> {
  if (!languageForPath(path)) return null;
  if (oldContent === newContent) return [];
  const prev = oldContent === undefined ? [] : await extractSymbols(path, oldContent, options);
  if (prev === null) return null;
  const next = newContent === undefined ? [] : await extractSymbols(path, newContent, options, oldContent);
  if (next === null) return null;
  return compareSymbols(prev, next);
}

/**
 * {@link diffSymbols} with the whole-file fallback applied: when the file is a
 * whole-file unit, the result is one change named by `path` with kind `"file"`
 * (added when `oldContent` is undefined, deleted when `newContent` is
 * undefined, otherwise modified; empty when the content is unchanged).
 */
export async function diffSymbolsOrFile(
  path: string,
  oldContent: string | undefined,
  newContent: string | undefined,
  options: ExtractOptions = {},
): Promise<SymbolChange[]> {
  const changes = await diffSymbols(path, oldContent, newContent, options);
  return changes ?? wholeFileChange(path, oldContent, newContent);
}

/** The whole-file unit's change of `path` (see {@link diffSymbolsOrFile}); compares only presence and equality. */
export function wholeFileChange<T>(path: string, oldContent: T | undefined, newContent: T | undefined): SymbolChange[] {
  if (oldContent === newContent) return [];
  const change = oldContent === undefined ? "added" : newContent === undefined ? "deleted" : "modified";
  return [{ name: path, kind: "file", change }];
}

/**
 * File content as the parser takes it. Binary content (a NUL byte) has no symbols: decoding it
 * would only waste the parser's time, so it becomes a text no grammar splits into symbols.
 */
export function symbolText(content: Uint8Array | undefined): string | undefined {
  if (content === undefined) return undefined;
  if (content.includes(0)) return "\u0000binary";
  return Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString("utf8");
}
