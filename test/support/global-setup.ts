/**
 * One temporary directory for a whole test run, removed when the run ends: every test process
 * keeps its environments below it (env-root.ts). Workers are ended without running exit
 * handlers, so a directory per process would otherwise stay behind (a git checkout per turn).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export default function setup(): () => void {
  const run = mkdtempSync(path.join(tmpdir(), "berth-test-run-"));
  // Forked test processes start after this and inherit it.
  process.env.BERTH_TEST_TMP = run;
  return () => rmSync(run, { recursive: true, force: true });
}
