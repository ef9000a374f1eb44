/**
 * What every language's walker shares (the *-walker.ts modules): the raw symbol they emit, the
 * collector that gathers them in document order, the extraction deadline every step checks, and
 * the small helpers over tree-sitter nodes and names. The deadline is checked here, in emit and
 * namedChildren, which every walker goes through at each step, so no walker has to check it itself.
 */
import { performance } from "node:perf_hooks";
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolKind } from "./types.js";

export interface RawSymbol {
  /** Qualified name before de-duplication. */
  name: string;
  kind: SymbolKind;
  /** JS string indices (web-tree-sitter parses UTF-16, so node indices are string indices). */
  start: number;
  end: number;
  startRow: number;
  endRow: number;
  endColumn: number;
  /** TS overload signature: folded into the following same-named declaration. */
  overload: boolean;
  children: RawSymbol[];
}

/** Thrown when walking the tree exceeds the extraction deadline. */
export class SymbolBudgetExceeded extends Error {
  constructor() {
    super("symbol extraction exceeded its time budget");
  }
}

// collectSymbols is synchronous, so one module-level deadline is safe.
let deadline = Number.POSITIVE_INFINITY;
function checkDeadline(): void {
  if (performance.now() > deadline) throw new SymbolBudgetExceeded();
}

/** Runs `walk` with the deadline at `until` (a `performance.now()` time), lifted again when it ends however it ends. */
export function withDeadline<T>(until: number, walk: () => T): T {
  deadline = until;
  try {
    return walk();
  } finally {
    deadline = Number.POSITIVE_INFINITY;
  }
}

export class Collector {
  readonly roots: RawSymbol[] = [];

  emit(
    parent: RawSymbol | null,
    name: string,
    kind: SymbolKind,
    from: Node,
    to: Node = from,
    overload = false,
  ): RawSymbol {
    checkDeadline();
    const sym: RawSymbol = {
      name,
      kind,
      start: from.startIndex,
      end: to.endIndex,
      startRow: from.startPosition.row,
      endRow: to.endPosition.row,
      endColumn: to.endPosition.column,
      overload,
      children: [],
    };
    (parent ? parent.children : this.roots).push(sym);
    return sym;
  }
}

export function namedChildren(node: Node): Node[] {
  checkDeadline();
  const out: Node[] = [];
  for (const c of node.namedChildren) if (c) out.push(c);
  return out;
}

export function field(node: Node, name: string): Node | null {
  return node.childForFieldName(name);
}

export function qualify(prefix: string, name: string): string {
  return prefix === "" ? name : `${prefix}.${name}`;
}

export function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

export function unquote(text: string): string {
  const q = text[0];
  if ((q === '"' || q === "'" || q === "`") && text.length >= 2 && text.endsWith(q)) return text.slice(1, -1);
  return text;
}
