/**
 * Rust: items, and the containers that hold items: `mod`, and `trait` and `impl`, whose functions
 * are methods (an impl's named after the implementing type, the impl itself `impl Trait for T`);
 * `#[…]` attributes belong to the item that follows them.
 */
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolKind } from "./types.js";
import { collapse, field, namedChildren, qualify, type Collector, type RawSymbol } from "./collector.js";

function rsTypeName(t: Node | null): string {
  for (let guard = 0; t && guard < 8; guard++) {
    switch (t.type) {
      case "type_identifier":
      case "primitive_type":
        return t.text;
      case "generic_type":
      case "reference_type":
      case "pointer_type":
        t = field(t, "type");
        break;
      case "scoped_type_identifier":
        t = field(t, "name");
        break;
      default:
        return collapse(t.text);
    }
  }
  return "?";
}

const RS_SIMPLE: Record<string, SymbolKind> = {
  struct_item: "struct",
  enum_item: "enum",
  union_item: "union",
  type_item: "type",
  const_item: "const",
  static_item: "const",
  macro_definition: "macro",
};

export function rsItems(c: Collector, container: Node, prefix: string, parent: RawSymbol | null, inImpl: boolean): void {
  let attribute: Node | null = null; // #[…] items belong to the item that follows them
  for (const child of namedChildren(container)) {
    if (child.type === "attribute_item") {
      attribute ??= child;
      continue;
    }
    if (child.type === "line_comment" || child.type === "block_comment") continue;
    const from = attribute ?? child;
    attribute = null;
    const simpleKind = RS_SIMPLE[child.type];
    if (simpleKind) {
      const name = field(child, "name");
      if (name) c.emit(parent, qualify(prefix, name.text), simpleKind, from, child);
      continue;
    }
    switch (child.type) {
      case "ERROR":
        rsItems(c, child, prefix, parent, inImpl);
        break;
      case "function_item":
      case "function_signature_item": {
        const name = field(child, "name");
        if (name) c.emit(parent, qualify(prefix, name.text), inImpl ? "method" : "function", from, child);
        break;
      }
      case "trait_item":
      case "mod_item": {
        const name = field(child, "name");
        if (!name) break;
        const q = qualify(prefix, name.text);
        const sym = c.emit(parent, q, child.type === "trait_item" ? "trait" : "module", from, child);
        const body = field(child, "body");
        if (body) rsItems(c, body, q, sym, child.type === "trait_item");
        break;
      }
      case "impl_item": {
        const self = qualify(prefix, rsTypeName(field(child, "type")));
        const trait = field(child, "trait");
        const implName = trait ? `impl ${collapse(trait.text)} for ${self}` : `impl ${self}`;
        const sym = c.emit(parent, implName, "impl", from, child);
        const body = field(child, "body");
        if (body) rsItems(c, body, self, sym, true);
        break;
      }
      default:
        break;
    }
  }
}
