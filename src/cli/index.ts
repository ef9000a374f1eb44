/** The client subcommands of the berth command; each group is one module. */
import type { Command } from "commander";
import { registerChangeset } from "./changeset.js";
import { registerClaims } from "./claims.js";
import { registerComments } from "./comments.js";
import { DEFAULT_SERVER } from "./client.js";
import { registerCompletion } from "./completion.js";
import { registerDiffs } from "./diffs.js";
import { registerEvents } from "./events.js";
import { registerFiles } from "./files.js";
import { registerHold } from "./hold.js";
import { resolveDeclaredIds } from "./ids.js";
import { checkUsage } from "./usage.js";
import { registerLanding } from "./landing.js";
import { registerMcp } from "./mcp.js";
import { registerRepos } from "./repos.js";
import { registerRun } from "./run.js";
import { registerSessions } from "./sessions.js";
import { registerTurns } from "./turns.js";
import { registerWorkspace } from "./workspace.js";


/** Global options (usable before or after the subcommand) and the client subcommands. */
export function registerClientCommands(program: Command): void {
  program
    .option("--server <url>", `the berth server's HTTP (Connect) URL (default: BERTH_SERVER, else http://BERTH_HTTP_ADDR, else ${DEFAULT_SERVER}); the token comes from BERTH_TOKEN`)
    .option("--json", "machine-readable output: the response's proto3 JSON (events watch: one event per line); errors as one JSON line on stderr")
    // Usage first, with no server call; then session, turn and changeset ids given by their first characters (src/cli/ids.ts).
    .hook("preAction", async (_program, command) => {
      checkUsage(command);
      await resolveDeclaredIds(command);
    })
    .addHelpText("after", "\nIds: a session, turn or changeset id may be given by its first characters (the 8 that tables and\nevents show) when they name one id; several or none is a usage error (exit 2) listing the matches.\nExit codes: 0 done, 1 the server refused or failed, 2 usage, 3 the server is unreachable\n(berth run: the command's own code; its own failures 124-127).");
  registerRepos(program);
  registerWorkspace(program);
  registerFiles(program);
  registerClaims(program);
  registerHold(program);
  registerSessions(program);
  registerChangeset(program);
  registerComments(program);
  registerLanding(program);
  registerEvents(program);
  registerTurns(program);
  registerDiffs(program);
  registerMcp(program);
  registerRun(program);
  registerCompletion(program);
}
