/**
 * Lazy loading of the web-tree-sitter runtime and grammars shipped by
 * `@vscode/tree-sitter-wasm`.
 *
 * - `Parser.init` runs once per process (memoised promise).
 * - Each grammar is read and compiled once, on first use, and cached.
 * - One `Parser` per language is kept and reused. Parsing is synchronous, so
 *   no two callers can interleave on a parser.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
// The package is a UMD/CommonJS bundle: Node exposes it as a default export only.
import treeSitter from "@vscode/tree-sitter-wasm";
import type { Language, Parser } from "@vscode/tree-sitter-wasm";
import type { SymbolLanguage } from "./types.js";

const GRAMMAR_FILE: Record<SymbolLanguage, string> = {
  typescript: "tree-sitter-typescript.wasm",
  tsx: "tree-sitter-tsx.wasm",
  javascript: "tree-sitter-javascript.wasm",
  python: "tree-sitter-python.wasm",
  go: "tree-sitter-go.wasm",
  rust: "tree-sitter-rust.wasm",
  java: "tree-sitter-java.wasm",
};

let wasmDir: string | undefined;
function wasmDirectory(): string {
  if (wasmDir === undefined) {
    const require = createRequire(import.meta.url);
    // Resolves to …/@vscode/tree-sitter-wasm/wasm/tree-sitter.js
    wasmDir = dirname(require.resolve("@vscode/tree-sitter-wasm"));
  }
  return wasmDir;
}

let initPromise: Promise<void> | undefined;
function initRuntime(): Promise<void> {
  if (initPromise === undefined) {
    const dir = wasmDirectory();
    initPromise = treeSitter.Parser.init({ locateFile: (file: string) => join(dir, file) });
    // A failed init is not cached (the callers get the rejection): the next use retries.
    initPromise.catch(() => {
      initPromise = undefined;
    });
  }
  return initPromise;
}

const parsers = new Map<SymbolLanguage, Promise<Parser>>();

async function createParser(lang: SymbolLanguage): Promise<Parser> {
  await initRuntime();
  const bytes = await readFile(join(wasmDirectory(), GRAMMAR_FILE[lang]));
  const language: Language = await treeSitter.Language.load(new Uint8Array(bytes));
  const parser = new treeSitter.Parser();
  parser.setLanguage(language);
  return parser;
}

/** The cached parser for `lang`, created (and the grammar loaded) on first use. */
export function parserFor(lang: SymbolLanguage): Promise<Parser> {
  let p = parsers.get(lang);
  if (p === undefined) {
    p = createParser(lang);
    // A failed load is not cached for ever: the next call retries.
    p.catch(() => parsers.delete(lang));
    parsers.set(lang, p);
  }
  return p;
}
