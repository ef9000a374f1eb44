/**
 * Per-language walkers from a tree-sitter syntax tree to raw symbols.
 *
 * Walkers only descend into *containers* (classes, namespaces/modules,
 * Rust `impl`/`trait`/`mod`, Java type bodies); a function is one unit
 * together with everything inside its body. `ERROR` nodes produced by
 * tree-sitter's error recovery are walked through transparently, so symbols
 * around a syntax error are still found.
 */
import { performance } from "node:perf_hooks";
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolKind, SymbolLanguage } from "./types.js";

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

class Collector {
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

function namedChildren(node: Node): Node[] {
  checkDeadline();
  const out: Node[] = [];
  for (const c of node.namedChildren) if (c) out.push(c);
  return out;
}

function field(node: Node, name: string): Node | null {
  return node.childForFieldName(name);
}

function qualify(prefix: string, name: string): string {
  return prefix === "" ? name : `${prefix}.${name}`;
}

function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function unquote(text: string): string {
  const q = text[0];
  if ((q === '"' || q === "'" || q === "`") && text.length >= 2 && text.endsWith(q)) return text.slice(1, -1);
  return text;
}

// ---------------------------------------------------------------------------
// TypeScript / TSX / JavaScript

const FUNCTION_VALUES = new Set(["arrow_function", "function_expression", "function", "generator_function"]);
const CLASS_VALUES = new Set(["class", "class_declaration", "abstract_class_declaration"]);

function tsStatements(c: Collector, container: Node, prefix: string, parent: RawSymbol | null): void {
  for (const child of namedChildren(container)) tsStatement(c, child, child, prefix, parent);
}

function tsClass(c: Collector, node: Node, outer: Node, name: string, prefix: string, parent: RawSymbol | null): void {
  const q = qualify(prefix, name);
  const sym = c.emit(parent, q, "class", outer, node);
  const body = field(node, "body");
  if (body) tsClassBody(c, body, q, sym);
}

function tsStatement(c: Collector, node: Node, outer: Node, prefix: string, parent: RawSymbol | null): void {
  const simple = (kind: SymbolKind, overload = false): void => {
    const name = field(node, "name");
    if (name) c.emit(parent, qualify(prefix, name.text), kind, outer, node, overload);
  };
  switch (node.type) {
    case "ERROR":
    case "statement_block": // `declare global { … }`
      tsStatements(c, node, prefix, parent);
      return;
    case "export_statement": {
      const decl = field(node, "declaration");
      if (decl) {
        tsStatement(c, decl, outer, prefix, parent);
        return;
      }
      // export default <expression>
      const value = field(node, "value");
      if (!value) return;
      const valueName = field(value, "name")?.text ?? "default";
      if (CLASS_VALUES.has(value.type)) tsClass(c, value, outer, valueName, prefix, parent);
      else if (FUNCTION_VALUES.has(value.type)) c.emit(parent, qualify(prefix, valueName), "function", outer, value);
      return;
    }
    case "ambient_declaration": // declare …
      for (const child of namedChildren(node)) tsStatement(c, child, outer, prefix, parent);
      return;
    case "expression_statement": {
      const inner = node.firstNamedChild;
      if (inner && (inner.type === "internal_module" || inner.type === "module")) {
        tsStatement(c, inner, outer, prefix, parent);
      }
      return;
    }
    case "function_declaration":
    case "generator_function_declaration":
      simple("function");
      return;
    case "function_signature":
      simple("function", true);
      return;
    case "class_declaration":
    case "abstract_class_declaration": {
      const name = field(node, "name");
      if (name) tsClass(c, node, outer, name.text, prefix, parent);
      return;
    }
    case "interface_declaration":
      simple("interface");
      return;
    case "type_alias_declaration":
      simple("type");
      return;
    case "enum_declaration":
      simple("enum");
      return;
    case "internal_module": // namespace A.B { … }
    case "module": {
      // module "name" { … }
      const name = field(node, "name");
      if (!name) return;
      const q = qualify(prefix, unquote(name.text));
      const sym = c.emit(parent, q, "module", outer, node);
      const body = field(node, "body");
      if (body) tsStatements(c, body, q, sym);
      return;
    }
    case "lexical_declaration":
    case "variable_declaration": {
      const isConst = node.type === "lexical_declaration" && node.child(0)?.type === "const";
      const declarators = namedChildren(node).filter((d) => d.type === "variable_declarator");
      const single = declarators.length === 1;
      for (const d of declarators) {
        const name = field(d, "name");
        if (!name || name.type !== "identifier") continue; // destructuring patterns are not symbols
        const value = field(d, "value");
        const from = single ? outer : d;
        const to = single ? node : d;
        if (value && CLASS_VALUES.has(value.type)) {
          const q = qualify(prefix, name.text);
          const sym = c.emit(parent, q, "class", from, to);
          const body = field(value, "body");
          if (body) tsClassBody(c, body, q, sym);
        } else {
          const kind: SymbolKind =
            value && FUNCTION_VALUES.has(value.type) ? "function" : isConst ? "const" : "variable";
          c.emit(parent, qualify(prefix, name.text), kind, from, to);
        }
      }
      return;
    }
    default:
      return;
  }
}

function memberName(node: Node | null): string | null {
  if (!node) return null;
  return node.type === "string" ? unquote(node.text) : node.text;
}

function tsClassBody(c: Collector, body: Node, prefix: string, parent: RawSymbol): void {
  let decorator: Node | null = null; // decorators precede their member inside class_body
  for (const m of namedChildren(body)) {
    if (m.type === "decorator") {
      decorator ??= m;
      continue;
    }
    if (m.type === "comment") continue;
    const from = decorator ?? m;
    decorator = null;
    switch (m.type) {
      case "method_definition": {
        const name = memberName(field(m, "name"));
        if (name) c.emit(parent, qualify(prefix, name), "method", from, m);
        break;
      }
      case "method_signature":
      case "abstract_method_signature": {
        const name = memberName(field(m, "name"));
        if (name) c.emit(parent, qualify(prefix, name), "method", from, m, true);
        break;
      }
      case "public_field_definition": // TS
      case "field_definition": {
        // JS
        const value = field(m, "value");
        if (!value || !FUNCTION_VALUES.has(value.type)) break;
        const name = memberName(field(m, "name") ?? field(m, "property"));
        if (name) c.emit(parent, qualify(prefix, name), "method", from, m);
        break;
      }
      case "ERROR":
        tsClassBody(c, m, prefix, parent);
        break;
      default:
        break;
    }
  }
}

// ---------------------------------------------------------------------------
// Python

function pyBlock(c: Collector, block: Node, prefix: string, parent: RawSymbol | null, inClass: boolean): void {
  for (const child of namedChildren(block)) {
    if (child.type === "ERROR") {
      pyBlock(c, child, prefix, parent, inClass);
      continue;
    }
    const def = child.type === "decorated_definition" ? field(child, "definition") : child;
    if (!def) continue;
    const name = field(def, "name");
    if (!name) continue;
    if (def.type === "function_definition") {
      c.emit(parent, qualify(prefix, name.text), inClass ? "method" : "function", child);
    } else if (def.type === "class_definition") {
      const q = qualify(prefix, name.text);
      const sym = c.emit(parent, q, "class", child);
      const body = field(def, "body");
      if (body) pyBlock(c, body, q, sym, true);
    }
  }
}

// ---------------------------------------------------------------------------
// Go

function goReceiverType(receiver: Node | null): string | null {
  if (!receiver) return null;
  const param = namedChildren(receiver).find((n) => n.type === "parameter_declaration");
  let t = param ? field(param, "type") : null;
  for (let guard = 0; t && guard < 8; guard++) {
    switch (t.type) {
      case "type_identifier":
        return t.text;
      case "pointer_type":
      case "parenthesized_type":
        t = t.firstNamedChild;
        break;
      case "generic_type":
        t = field(t, "type");
        break;
      default:
        return collapse(t.text);
    }
  }
  return null;
}

function goTop(c: Collector, root: Node): void {
  for (const child of namedChildren(root)) {
    switch (child.type) {
      case "ERROR":
        goTop(c, child);
        break;
      case "function_declaration": {
        const name = field(child, "name");
        if (name) c.emit(null, name.text, "function", child);
        break;
      }
      case "method_declaration": {
        const name = field(child, "name");
        if (!name) break;
        const recv = goReceiverType(field(child, "receiver"));
        c.emit(null, recv ? `${recv}.${name.text}` : name.text, "method", child);
        break;
      }
      case "type_declaration": {
        const specs = namedChildren(child).filter((s) => s.type === "type_spec" || s.type === "type_alias");
        for (const spec of specs) {
          const name = field(spec, "name");
          if (!name) continue;
          const type = field(spec, "type")?.type;
          const kind: SymbolKind =
            spec.type === "type_spec" && type === "struct_type"
              ? "struct"
              : spec.type === "type_spec" && type === "interface_type"
                ? "interface"
                : "type";
          c.emit(null, name.text, kind, specs.length === 1 ? child : spec);
        }
        break;
      }
      case "const_declaration":
      case "var_declaration": {
        const specs = namedChildren(child).filter((s) => s.type === "const_spec" || s.type === "var_spec");
        const kind: SymbolKind = child.type === "const_declaration" ? "const" : "variable";
        for (const spec of specs) {
          const names = spec.childrenForFieldName("name").filter((n): n is Node => n !== null);
          for (const name of names) {
            if (name.text === "_") continue;
            c.emit(null, name.text, kind, specs.length === 1 && names.length === 1 ? child : spec);
          }
        }
        break;
      }
      default:
        break;
    }
  }
}

// ---------------------------------------------------------------------------
// Rust

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

function rsItems(c: Collector, container: Node, prefix: string, parent: RawSymbol | null, inImpl: boolean): void {
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

// ---------------------------------------------------------------------------
// Java

const JAVA_TYPES: Record<string, SymbolKind> = {
  class_declaration: "class",
  record_declaration: "class",
  interface_declaration: "interface",
  annotation_type_declaration: "interface",
  enum_declaration: "enum",
};

function javaBody(c: Collector, body: Node, prefix: string, parent: RawSymbol | null): void {
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

// ---------------------------------------------------------------------------

/**
 * Raw symbols (a forest, in document order) of a parsed file.
 * Throws {@link SymbolBudgetExceeded} once `performance.now()` passes `until`.
 */
export function collectSymbols(lang: SymbolLanguage, root: Node, until = Number.POSITIVE_INFINITY): RawSymbol[] {
  deadline = until;
  try {
    return collectInto(lang, root);
  } finally {
    deadline = Number.POSITIVE_INFINITY;
  }
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
