/**
 * The berth command: its commands, options and exit codes, shared by the two entry points —
 * src/main.ts (run through tsx: `npm start`) and src/cli/main.ts (compiled to bin/compiled/
 * for a fast start). serve and migrate are given by the entry point, loaded only when run.
 */
import { Command, CommanderError } from "commander";
import { registerClientCommands } from "./index.js";
import { CliExit, EXIT } from "./output.js";
import { VERSION } from "./version.js";

export interface ServerCommands {
  serve(opts: { insecure?: boolean }): Promise<void>;
  migrate(opts: { dryRun?: boolean }): Promise<void>;
}

/** --json among berth's own arguments: after `--` they are another program's (berth run). */
const wantsJson = (argv: readonly string[]) => {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).includes("--json");
};

export function createProgram(server: ServerCommands, argv: readonly string[] = process.argv): Command {
  const json = wantsJson(argv);
  const program = new Command()
    .name("berth")
    .description("A registry of session workspaces and a turn scheduler for fleets of AI coding agents.")
    .version(VERSION, "-V, --version", "print the version")
    .showHelpAfterError(!json)
    // Usage errors exit 2 (see runProgram); set before the subcommands, which inherit it.
    .exitOverride()
    .configureOutput({
      // --json: a usage error is one JSON line too, like every other failure.
      outputError: (text, write) =>
        write(json ? `${JSON.stringify({ code: "INVALID_ARGUMENT", reason: "USAGE", message: text.replace(/^error: /, "").trim(), details: {} })}\n` : text),
    });

  program
    .command("serve")
    .description("serve gRPC (BERTH_ADDR) and Connect/gRPC-Web/JSON (BERTH_HTTP_ADDR); configuration from the environment")
    .option("--insecure", "allow a non-loopback address without auth")
    .action((opts: { insecure?: boolean }) => server.serve(opts));

  program
    .command("migrate")
    .description("apply pending database migrations (DATABASE_URL, or the embedded database under BERTH_DATA_DIR)")
    .option("--dry-run", "list pending migrations without applying them")
    .action((opts: { dryRun?: boolean }) => server.migrate(opts));

  registerClientCommands(program);
  return program;
}

/**
 * Exits once stdout and stderr have handed everything to the OS: a write to a pipe is
 * asynchronous, and process.exit drops what is still queued (`berth file cat … | sha256sum`
 * would see the first 64 KiB). Write callbacks run in order, so the empty writes' run last.
 */
function exitFlushed(code: number): void {
  process.exitCode = code;
  process.stdout.write("", () => process.stderr.write("", () => process.exit(code)));
}

/** Parses and runs; exits with the command's code (0, or those of EXIT). */
export function runProgram(program: Command, argv: readonly string[] = process.argv): void {
  program.parseAsync(argv).then(
    // Keep-alive sockets and timers of a finished call must not hold the process open.
    () => exitFlushed(Number(process.exitCode ?? 0)),
    (err: unknown) => {
      if (err instanceof CliExit) return exitFlushed(err.exitCode);
      if (err instanceof CommanderError) {
        // commander has printed the message (or the help); --help and --version are not errors.
        return exitFlushed(err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help" ? 0 : EXIT.usage);
      }
      // serve and migrate run the server's own copies of these classes (loaded through tsx from the
      // compiled entry point), so they are told by name and shape, not by instanceof.
      if (err instanceof Error && err.name === "ConfigError") {
        console.error(`berth: configuration error: ${err.message}`);
        return exitFlushed(2);
      }
      // A refusal the domain explains carries its machine-readable reason, for scripts and logs.
      const reason = err instanceof Error && err.name === "BerthError" ? ` (${String((err as Error & { reason?: unknown }).reason)})` : "";
      console.error(`berth: ${err instanceof Error ? err.message : String(err)}${reason}`);
      return exitFlushed(1);
    },
  );
}
