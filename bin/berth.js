#!/usr/bin/env node
// The compiled client commands (bin/compiled/, committed: npm runs no build at install) start
// without a TypeScript loader; without them, the TypeScript entry point runs through tsx.
import { existsSync } from "node:fs";

const compiled = new URL("./compiled/src/cli/main.js", import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/main.ts");
}
