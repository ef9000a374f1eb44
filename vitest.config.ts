import { configDefaults, defineConfig } from "vitest/config";

/** BERTH_TEST_INSTANCES=2: startBerth() starts two instances on one database (test/support/instances.ts). */
const instances = Number(process.env.BERTH_TEST_INSTANCES || "1");

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The run's temporary directory (environments of the servers tests start), removed at its end.
    globalSetup: ["./test/support/global-setup.ts"],
    exclude: [...configDefaults.exclude],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two cores: more parallel files only contend for them and for PostgreSQL.
    maxWorkers: 2,
    // The default output, then what was skipped for a missing service (test/support/services.ts).
    reporters: ["default", "./test/support/skip-summary.ts"],
    // Several instances need PostgreSQL: this runner skips (names) every file without it.
    ...(instances > 1 ? { runner: "./test/support/instances-runner.ts" } : {}),
  },
});
