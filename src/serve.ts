/** berth serve and berth migrate: the server's side of the command, loaded only for them. */
import { loadConfig } from "./config.js";

export async function serve(opts: { insecure?: boolean }): Promise<void> {
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
  // Serving: the command's action never settles, so the process is not ended after it.
  await new Promise<never>(() => undefined);
}

export async function migrate(opts: { dryRun?: boolean }): Promise<void> {
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
}
