/**
 * TypeScript, TSX and JavaScript (one grammar family, one walker): statements, exports,
 * `declare`d and ambient blocks, namespaces and modules, classes and their members, and the
 * `const`/`let`/`var` declarators whose value is a function or a class. Overload signatures are
 * emitted as such, for index.ts to fold into the declaration that follows them.
 */
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolKind } from "./types.js";
import { field, namedChildren, qualify, unquote, type Collector, type RawSymbol } from "./collector.js";

const FUNCTION_VALUES = new Set(["arrow_function", "function_expression", "function", "generator_function"]);
const CLASS_VALUES = new Set(["class", "class_declaration", "abstract_class_declaration"]);

export function tsStatements(c: Collector, container: Node, prefix: string, parent: RawSymbol | null): void {
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
