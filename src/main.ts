/** The berth command: serve and migrate here; the client subcommands (repos, sessions, …) in src/cli/. */
import { Command, CommanderError } from "commander";
import { CliExit, EXIT, registerClientCommands } from "./cli/index.js";
import { ConfigError, loadConfig } from "./config.js";
import { BerthError } from "./platform/errors.js";

// The server's modules load only for serve and migrate: the client subcommands start in a
// fraction of the time without them.

const program = new Command()
  .name("berth")
  .description("A registry of session workspaces and a turn scheduler for fleets of AI coding agents.")
  .showHelpAfterError()
  // Usage errors exit 2 (see the catch below); set before the subcommands, which inherit it.
  .exitOverride();

program
  .command("serve")
  .description("serve gRPC (BERTH_ADDR) and Connect/gRPC-Web/JSON (BERTH_HTTP_ADDR); configuration from the environment")
  .option("--insecure", "allow a non-loopback address without auth")
  .action(async (opts: { insecure?: boolean }) => {
    const config = loadConfig(process.env, opts.insecure ? { insecure: true } : {});
    const [{ createLogger }, { build }] = await Promise.all([import("./platform/logger.js"), import("./transport/build.js")]);
    const logger = createLogger(config.logLevel);
    const server = await build(config, { logger });
    let stoppingSince: number | undefined;
    const stop = (signal: string) => {
      if (stoppingSince !== undefined) {
        // npm relays the terminal's signal too, so one Ctrl-C can arrive twice at once;
        // only a signal sent deliberately later cuts the graceful shutdown short.
        if (Date.now() - stoppingSince < 1000) return;
        logger.warn({ signal }, "second signal: exiting now");
        process.exit(1);
      }
      stoppingSince = Date.now();
      logger.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
      server.close().then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
  });

program
  .command("migrate")
  .description("apply pending database migrations (DATABASE_URL, or the embedded database under BERTH_DATA_DIR)")
  .option("--dry-run", "list pending migrations without applying them")
  .action(async (opts: { dryRun?: boolean }) => {
    const config = loadConfig(process.env);
    const [{ openDatabase }, { assertNotNewer, migrateToLatest, migrationStatus }] = await Promise.all([
      import("./platform/database.js"),
      import("./platform/migrate.js"),
    ]);
    const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir });
    try {
      await assertNotNewer(database.db);
      const status = await migrationStatus(database.db);
      const pending = status.filter((m) => !m.applied);
      for (const m of status.filter((s) => s.applied)) console.log(`  applied  ${m.name}`);
      if (opts.dryRun) {
        for (const m of pending) console.log(`  pending  ${m.name}`);
        console.log(`${pending.length} pending migration(s); nothing applied (--dry-run)`);
        return;
      }
      let i = 0;
      await migrateToLatest(database.db, (name) => console.log(`  [${++i}/${pending.length}] applied ${name}`));
      console.log(pending.length === 0 ? "database is up to date" : `${pending.length} migration(s) applied`);
    } finally {
      await database.close();
    }
  });

registerClientCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CliExit) process.exit(err.exitCode);
  if (err instanceof CommanderError) {
    // commander has printed the message (or the help); --help and --version are not errors.
    process.exit(err.code === "commander.helpDisplayed" || err.code === "commander.version" ? 0 : EXIT.usage);
  }
  if (err instanceof ConfigError) {
    console.error(`berth: configuration error: ${err.message}`);
    process.exit(2);
  }
  // A refusal the domain explains carries its machine-readable reason, for scripts and logs.
  const reason = err instanceof BerthError ? ` (${err.reason})` : "";
  console.error(`berth: ${err instanceof Error ? err.message : String(err)}${reason}`);
  process.exit(1);
});
