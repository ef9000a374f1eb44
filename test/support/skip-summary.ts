/**
 * A vitest reporter (after the default one) that ends the run with what was skipped and why:
 *   SKIPPED (no PostgreSQL): 14 tests in test/e2e/multi-instance.test.ts, …
 * grouped by the gates' meta.skippedFor (test/support/services.ts); other skips are listed as
 * such, and tests that ran without one of their checks (meta.partlySkipped) are named too.
 */
import type { Reporter, TestModule } from "vitest/node";
import "./task-meta.js";

interface Group {
  tests: number;
  files: Set<string>;
}

export default class SkipSummary implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const skipped = new Map<string, Group>();
    const partly: string[] = [];
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const meta = test.meta();
        const state = test.result().state;
        if (state === "skipped") {
          const reason = meta.skippedFor ?? "other: skipIf/todo/filtered, see the file's warnings";
          const group = skipped.get(reason) ?? { tests: 0, files: new Set<string>() };
          group.tests++;
          group.files.add(module.relativeModuleId);
          skipped.set(reason, group);
        } else if (meta.partlySkipped) {
          partly.push(`${module.relativeModuleId} > ${test.fullName} (${meta.partlySkipped})`);
        }
      }
    }
    if (skipped.size === 0 && partly.length === 0) return;
    const lines = ["", "Skipped on this machine:"];
    for (const [reason, g] of skipped) {
      lines.push(`  SKIPPED (${reason}): ${g.tests} test${g.tests === 1 ? "" : "s"} in ${[...g.files].sort().join(", ")}`);
    }
    for (const p of partly) lines.push(`  PARTLY SKIPPED: ${p}`);
    lines.push("  To run everything: start PostgreSQL and install nats-server and chromium, then BERTH_REQUIRE_SERVICES=1 npm test (README, Developing).", "");
    process.stdout.write(lines.join("\n") + "\n");
  }
}
