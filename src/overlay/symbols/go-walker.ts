/**
 * Go: top-level functions, methods (named after their receiver's type, `Server.Start`), type
 * declarations and `const`/`var` specs. Go has no nested containers, so there is no prefix to
 * carry down.
 */
import type { Node } from "@vscode/tree-sitter-wasm";
import type { SymbolKind } from "./types.js";
import { collapse, field, namedChildren, type Collector } from "./collector.js";

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

export function goTop(c: Collector, root: Node): void {
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
