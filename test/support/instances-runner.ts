/**
 * The test runner of BERTH_TEST_INSTANCES=2 (vitest.config.ts): the default one, plus the gate of
 * the mode. Several instances share one database through a connection each, which the in-memory
 * PGlite cannot give: without PostgreSQL every test of every file is skipped, the file named, as
 * needs() skips a test (test/support/services.ts: the same line, the same meta.skippedFor for
 * the end-of-run summary); with BERTH_REQUIRE_SERVICES=1 the run fails instead. Nothing runs on
 * PGlite: not a test, not a hook.
 */
import { TestRunner, type RunnerTask, type RunnerTestFile } from "vitest";
import { TEST_INSTANCES } from "./instances.js";
import { fileSkippedFor } from "./services.js";

export default class InstancesRunner extends TestRunner {
  onCollected(files: RunnerTestFile[]): void {
    for (const file of files) {
      if (file.result?.state === "fail") continue; // failed to collect: reported as such
      const reason = fileSkippedFor(file.name, { postgres: true }, `${TEST_INSTANCES} instances on one database (BERTH_TEST_INSTANCES=${TEST_INSTANCES})`);
      if (reason !== undefined) skipAll(file, reason);
    }
  }
}

/**
 * Skips every test under `task` and drops the hooks of every suite (beforeAll starts the servers).
 * The modes were already reported as collected, so the suites still "run" (hookless) and each
 * test reports its skip, with the reason, when its turn comes.
 */
function skipAll(task: RunnerTask, reason: string): void {
  if (task.type === "test") {
    task.mode = "skip";
    task.result = { state: "skip" };
    task.meta.skippedFor = reason;
    return;
  }
  const hooks = TestRunner.getSuiteHooks(task);
  for (const list of Object.values(hooks)) (list as unknown[]).length = 0;
  for (const t of task.tasks) skipAll(t, reason);
}
