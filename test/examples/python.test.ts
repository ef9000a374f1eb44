/**
 * clients/python (berth_client): its committed stubs are what clients/python/generate.sh makes
 * from proto/ (Debian's protoc + grpc_python_plugin), and examples/python/client.py, which uses the
 * package, runs its whole flow under /usr/bin/python3 against a real server. Skips loudly when the
 * Debian packages are missing, unless BERTH_REQUIRE_SERVICES=1 (CI installs them in .ci/run).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { REQUIRE_SERVICES } from "../support/services.js";
import { run, succeeds } from "./helpers.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PYTHON = "/usr/bin/python3";
const haveTools =
  succeeds(PYTHON, ["-c", "import grpc, google.protobuf"]) && succeeds("sh", ["-c", "command -v protoc && command -v grpc_python_plugin"]);
if (!haveTools) {
  const message = `${PYTHON} with grpc/protobuf, protoc or grpc_python_plugin is missing (apt-get install python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc)`;
  if (REQUIRE_SERVICES) throw new Error(`${message}, and BERTH_REQUIRE_SERVICES=1 forbids skipping`);
  console.warn(`\n*** SKIPPED: ${message}; the Python example is not tested ***\n`);
}

/** Relative path → content of every file under dir. */
function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || e.name.endsWith(".pyc")) continue;
    const full = path.join(e.parentPath ?? (e as { path?: string }).path ?? dir, e.name);
    out.set(path.relative(dir, full), readFileSync(full, "utf8"));
  }
  return out;
}

describe.skipIf(!haveTools)("clients/python and examples/python", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("the committed stubs are what generate.sh makes from the protos", async () => {
    const scratch = mkdtempSync(path.join(tmpdir(), "berth-py-stubs-"));
    try {
      const gen = await run("bash", [path.join(ROOT, "clients/python/generate.sh"), scratch]);
      expect(gen.stderr).toBe("");
      expect(gen.code).toBe(0);
      const fresh = tree(scratch);
      const committed = tree(path.join(ROOT, "clients/python/berth_client/_stubs"));
      expect([...committed.keys()].sort()).toEqual([...fresh.keys()].sort());
      const stale = [...fresh].filter(([f, text]) => committed.get(f) !== text).map(([f]) => f);
      expect(stale, "stale stubs: run clients/python/generate.sh and commit the result").toEqual([]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("runs the example's whole flow through berth_client", async () => {
    const r = await run(PYTHON, [path.join(ROOT, "examples/python/client.py"), "--server", berth.server.grpcAddress]);
    if (r.code !== 0) console.error(r.stdout, r.stderr);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/registered repository py-demo-/);
    expect(r.stdout).toMatch(/while heartbeating/);
    expect(r.stdout).toMatch(/a stranded session answers FAILED_PRECONDITION SESSION_STRANDED/);
    expect(r.stdout).toMatch(/resumed as session [0-9a-f-]{36} \(same workspace\)/);
    expect(r.stdout).toMatch(/session\.resumed/);
    expect(r.stdout.trim().endsWith("OK")).toBe(true);
    // What it did is on the server too.
    expect(berth.logs.some((l) => l["method"] === "/berth.v1.WorkspaceService/ResumeSession" && l["code"] === "OK" && l["protocol"] === "grpc")).toBe(true);
  });
});
