/**
 * Java: type declarations (classes, records, interfaces, annotation types, enums) and their
 * methods and constructors, nested types included.
 */
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolKind } from "./types.js";
import { field, namedChildren, qualify, type Collector, type RawSymbol } from "./collector.js";

const JAVA_TYPES: Record<string, SymbolKind> = {
  class_declaration: "class",
  record_declaration: "class",
  interface_declaration: "interface",
  annotation_type_declaration: "interface",
  enum_declaration: "enum",
};

export function javaBody(c: Collector, body: Node, prefix: string, parent: RawSymbol | null): void {
  for (const child of namedChildren(body)) {
    const typeKind = JAVA_TYPES[child.type];
    if (typeKind) {
      const name = field(child, "name");
      if (!name) continue;
      const q = qualify(prefix, name.text);
      const sym = c.emit(parent, q, typeKind, child);
      const inner = field(child, "body");
      if (inner) javaBody(c, inner, q, sym);
      continue;
    }
    switch (child.type) {
      case "ERROR":
      case "enum_body_declarations":
        javaBody(c, child, prefix, parent);
        break;
      case "method_declaration":
      case "constructor_declaration":
      case "compact_constructor_declaration": {
        const name = field(child, "name");
        if (name && prefix !== "") c.emit(parent, qualify(prefix, name.text), "method", child);
        break;
      }
      default:
        break;
    }
  }
}
