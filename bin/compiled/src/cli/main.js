/**
 * The berth command's compiled entry point (bin/compiled/, `npm run build:cli`): the client
 * commands as plain JavaScript, no TypeScript loader, so that a call starts fast. serve and
 * migrate need the server's TypeScript sources: they register tsx and load src/serve.ts then.
 */
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createProgram, runProgram } from "./program.js";
import { ROOT } from "./version.js";
async function serverModule() {
    const { register } = await import("tsx/esm/api");
    register();
    return (await import(pathToFileURL(path.join(ROOT, "src/serve.ts")).href));
}
runProgram(createProgram({
    serve: async (opts) => (await serverModule()).serve(opts),
    migrate: async (opts) => (await serverModule()).migrate(opts),
}));
