/**
 * The real command, as a user runs it: `berth serve` on the embedded database (what `npm start`
 * runs on a fresh machine), `berth migrate` (embedded, and on an empty PostgreSQL), health over reflection with buf curl, and SIGTERM.
 */
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/database.js";
import { BIN, ROOT, serve } from "../support/serve-process.js";
import { needs } from "../support/services.js";

const run = promisify(execFile);
const BUF = path.join(ROOT, "node_modules/.bin/buf");

describe("berth serve on the embedded database", () => {
  it("serves gRPC and Connect, answers health and reflection, and stops cleanly on SIGTERM", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "berth-data-"));
    const s = await serve({ BERTH_DATA_DIR: dataDir });
    expect(s.lines.find((l) => l.msg === "database opened")).toMatchObject({ database: "pglite", location: path.join(dataDir, "pgdata") });

    const health = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", "{}", `http://${s.grpc}/grpc.health.v1.Health/Check`]);
    expect(JSON.parse(health.stdout)).toEqual({ status: "SERVING" });

    const registered = await fetch(`${s.http}/berth.v1.WorkspaceService/RegisterRepository`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "tour" }),
    });
    expect(registered.status).toBe(200);
    const listed = await run(BUF, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", "{}", `http://${s.grpc}/berth.v1.WorkspaceService/ListRepositories`]);
    expect((JSON.parse(listed.stdout) as { repositories: { name: string }[] }).repositories.map((r) => r.name)).toEqual(["tour"]);

    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(s.lines.some((l) => l.msg === "stopped")).toBe(true);

    // The data survived: a second start on the same directory lists the repository.
    const again = await serve({ BERTH_DATA_DIR: dataDir });
    const res = await fetch(`${again.http}/berth.v1.WorkspaceService/ListRepositories`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(((await res.json()) as { repositories: { name: string }[] }).repositories.map((r) => r.name)).toEqual(["tour"]);
    again.child.kill("SIGINT");
    expect(await again.exited).toBe(0);
  }, 400_000);

  it("refuses to start with a bad variable, naming it", async () => {
    const result = await run(process.execPath, [BIN, "serve"], { cwd: ROOT, env: { ...process.env, BERTH_ADDR: "0.0.0.0:0" } }).catch((e: { code: number; stderr: string }) => e);
    expect((result as { code: number }).code).toBe(2);
    expect((result as { stderr: string }).stderr).toMatch(/BERTH_ADDR: .*non-loopback.*--insecure/);
  }, 120_000);
});

describe("berth migrate", () => {
  it("on a fresh embedded directory finds every migration applied: the first open copies the migrated template", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "berth-migrate-"));
    const env = { ...process.env, DATABASE_URL: "", BERTH_DATA_DIR: dataDir };
    const dry = await run(process.execPath, [BIN, "migrate", "--dry-run"], { cwd: ROOT, env });
    expect(dry.stdout).toMatch(/applied\s+0001_foundation/);
    expect(dry.stdout).toMatch(/^0 pending migration\(s\)/m);
    const again = await run(process.execPath, [BIN, "migrate"], { cwd: ROOT, env });
    expect(again.stdout).toMatch(/up to date/);
  }, 300_000);
});

needs({ postgres: true })("berth migrate on an empty PostgreSQL database", () => {
  it("lists pending migrations with --dry-run, then applies them with progress", async () => {
    const database = await createTestDatabase("postgres", { migrate: false });
    try {
      const env = { ...process.env, DATABASE_URL: database.url! };
      const dry = await run(process.execPath, [BIN, "migrate", "--dry-run"], { cwd: ROOT, env });
      expect(dry.stdout).toMatch(/pending\s+0001_foundation/);
      expect(dry.stdout).toMatch(/nothing applied/);
      const applied = await run(process.execPath, [BIN, "migrate"], { cwd: ROOT, env });
      expect(applied.stdout).toMatch(/\[1\/\d+\] applied 0001_foundation/);
      const again = await run(process.execPath, [BIN, "migrate"], { cwd: ROOT, env });
      expect(again.stdout).toMatch(/up to date/);
    } finally {
      await database.drop();
    }
  }, 300_000);
});
