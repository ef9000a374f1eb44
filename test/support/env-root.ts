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
