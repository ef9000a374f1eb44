/**
 * Python: functions and classes, at the top level and in class bodies (a function in a class is a
 * method); decorators belong to the definition they decorate.
 */
import type { Node } from "@vscode/tree-sitter-wasm";
import { field, namedChildren, qualify, type Collector, type RawSymbol } from "./collector.js";

export function pyBlock(c: Collector, block: Node, prefix: string, parent: RawSymbol | null, inClass: boolean): void {
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
