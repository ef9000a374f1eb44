/**
 * Where a test that names no BERTH_ENV_ROOT keeps its environments: one temporary directory per
 * test process — never the user's data directory (the default) and never inside this repository
 * (refused at start) — inside the run's directory (global-setup.ts), which the run removes.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

let root: string | undefined;

export function testEnvRoot(): string {
  return (root ??= mkdtempSync(path.join(process.env.BERTH_TEST_TMP ?? tmpdir(), "berth-test-envs-")));
}

/**
 * A fresh data directory (BERTH_DATA_DIR) for a cluster that names none: where each instance
 * keeps its mirrors of repositories on a git server, never the working directory's ./.berth.
 * Instances after the first get `<dir>.instance-<n>` (startBerth), as on machines of their own.
 */
export function testDataDir(): string {
  return mkdtempSync(path.join(process.env.BERTH_TEST_TMP ?? tmpdir(), "berth-test-data-"));
}
