/**
 * The berth command run through tsx (`npm start`, and bin/berth.js when bin/compiled/ is
 * missing). The server's modules load only for serve and migrate: the client subcommands start
 * in a fraction of the time without them.
 */
import { createProgram, runProgram } from "./cli/program.js";

runProgram(
  createProgram({
    serve: async (opts) => (await import("./serve.js")).serve(opts),
    migrate: async (opts) => (await import("./serve.js")).migrate(opts),
  }),
);
