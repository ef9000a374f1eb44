/** examples/typescript: the Connect client run with tsx against a real server, on each protocol of the HTTP port. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { run } from "./helpers.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");

describe("examples/typescript", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  it.each(["connect", "grpc-web"])("runs the whole flow over %s", async (protocol) => {
    const r = await run(TSX, ["examples/typescript/client.ts", "--server", berth.server.httpUrl, "--protocol", protocol], { cwd: ROOT });
    if (r.code !== 0) console.error(r.stdout, r.stderr);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/a stranded session answers FailedPrecondition SESSION_STRANDED/);
    expect(r.stdout).toMatch(/session\.resumed/);
    expect(r.stdout.trim().endsWith("OK")).toBe(true);
    const expected = protocol === "connect" ? "connect" : "grpc-web";
    expect(berth.logs.some((l) => l["method"] === "/berth.v1.WorkspaceService/ResumeSession" && l["protocol"] === expected)).toBe(true);
  });

  it("exits non-zero with the server's reason when the server is not there", async () => {
    const r = await run(TSX, ["examples/typescript/client.ts", "--server", "http://127.0.0.1:9"], { cwd: ROOT });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/UNEXPECTED/);
  });
});
