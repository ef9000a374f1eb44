/**
 * Public types of the symbol extraction module.
 *
 * A *symbol* is a named, addressable unit of a source file (a function, a
 * class, a method, a Rust `impl` block, …). Names are qualified with their
 * enclosing containers and joined with `.`: `TaskService.create_task`,
 * `A.B.f`, `Server.Start`, `m.n.g`.
 */

export type SymbolKind =
  | "function"
  | "method"
  | "class"
  | "interface"
  | "type"
  | "enum"
  | "struct"
  | "union"
  | "trait"
  | "impl"
  | "module"
  | "const"
  | "variable"
  | "macro";

export interface SymbolDef {
  /** Qualified name, unique within the file (duplicates get `#2`, `#3`, … in document order). */
  name: string;
  kind: SymbolKind;
  /** 1-based, inclusive. */
  startLine: number;
  /** 1-based, inclusive. */
  endLine: number;
  /**
   * Hex sha256 of the symbol's *own* source text, normalised: CRLF → LF,
   * trailing whitespace stripped from every line and blank lines dropped.
   * The text of nested symbols (methods of a class, functions of a module,
   * items of an `impl`) is cut out of their container's text, so editing one
   * method changes only that method's hash, not the class's.
   */
  hash: string;
}

export type SymbolChangeKind = "added" | "modified" | "deleted";

export interface SymbolChange {
  name: string;
  /**
   * The symbol's kind (from the new content for added/modified, from the old
   * content for deleted). `"file"` only in the whole-file fallback of
   * {@link diffSymbolsOrFile}.
   */
  kind: SymbolKind | "file";
  change: SymbolChangeKind;
}

/** Languages with a grammar. Anything else is handled as a whole-file unit. */
export type SymbolLanguage = "typescript" | "tsx" | "javascript" | "python" | "go" | "rust" | "java";

export interface ExtractOptions {
  /** Content larger than this (UTF-8 bytes) is not parsed: whole-file unit. Default 2 MiB. */
  maxBytes?: number;
  /** Parsing plus walking the tree longer than this is abandoned: whole-file unit. Default 200 ms. */
  timeoutMs?: number;
}
