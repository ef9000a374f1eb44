import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two cores: more parallel files only contend for them and for PostgreSQL.
    maxWorkers: 2,
    // The default output, then what was skipped for a missing service (test/support/services.ts).
    reporters: ["default", "./test/support/skip-summary.ts"],
  },
});
