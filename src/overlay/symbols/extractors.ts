/**
 * Per-language walkers from a tree-sitter syntax tree to raw symbols.
 *
 * Walkers only descend into *containers* (classes, namespaces/modules,
 * Rust `impl`/`trait`/`mod`, Java type bodies); a function is one unit
 * together with everything inside its body. `ERROR` nodes produced by
 * tree-sitter's error recovery are walked through transparently, so symbols
 * around a syntax error are still found.
 *
 * This module picks the walker for a language and runs it under the deadline; each walker is a
 * module of its own (*-walker.ts), and what they share (the collector, the deadline, node helpers)
 * is collector.ts.
 */
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolLanguage } from "./types.js";
import { Collector, withDeadline, type RawSymbol } from "./collector.js";
import { goTop } from "./go-walker.js";
import { javaBody } from "./java-walker.js";
import { pyBlock } from "./python-walker.js";
import { rsItems } from "./rust-walker.js";
import { tsStatements } from "./typescript-walker.js";

export { SymbolBudgetExceeded, type RawSymbol } from "./collector.js";

/**
 * Raw symbols (a forest, in document order) of a parsed file.
 * Throws {@link SymbolBudgetExceeded} once `performance.now()` passes `until`.
 */
export function collectSymbols(lang: SymbolLanguage, root: Node, until = Number.POSITIVE_INFINITY): RawSymbol[] {
  return withDeadline(until, () => collectInto(lang, root));
}

function collectInto(lang: SymbolLanguage, root: Node): RawSymbol[] {
  const c = new Collector();
  switch (lang) {
    case "typescript":
    case "tsx":
    case "javascript":
      tsStatements(c, root, "", null);
      break;
    case "python":
      pyBlock(c, root, "", null, false);
      break;
    case "go":
      goTop(c, root);
      break;
    case "rust":
      rsItems(c, root, "", null, false);
      break;
    case "java":
      javaBody(c, root, "", null);
      break;
  }
  return c.roots;
}
