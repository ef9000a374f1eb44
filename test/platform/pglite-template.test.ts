/**
 * migrations/template/ (src/platform/pglite-template.ts): the committed PGlite data directory is
 * made from the migrations as they are now, and a first start on an empty data directory is
 * that copy (no initdb), already migrated.
 */
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, type OpenedDatabase } from "../../src/platform/database.js";
import { migrationStatus } from "../../src/platform/migrate.js";
import { committedManifest, currentManifest, seedFromTemplate, TEMPLATE_FILE } from "../../src/platform/pglite-template.js";
import { extractTar } from "../../src/platform/tar.js";

function tarHeader(name: string, type: string, size = 0): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, "utf8");
  h.write(size.toString(8).padStart(11, "0"), 124, "ascii");
  h.write(type, 156, "ascii");
  return h;
}

describe("the PGlite template", () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  it("matches the migrations and the installed PGlite (else: npm run -s pglite:template)", async () => {
    expect(await committedManifest()).toEqual(await currentManifest());
  });

  it("seeds a first start's data directory, every migration applied, and is resumed by the next", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "berth-template-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    let opened: OpenedDatabase = await openDatabase({ url: undefined, dataDir: dir });
    cleanup.push(() => opened.close());
    expect(opened.seededFromTemplate).toBe(true);
    const status = await migrationStatus(opened.db);
    expect(status.filter((m) => !m.applied)).toEqual([]);
    await opened.close();
    // Nothing left beside the data directory (the staging copy is renamed into place).
    expect(await readdir(dir)).toEqual(["pgdata"]);
    opened = await openDatabase({ url: undefined, dataDir: dir });
    expect(opened.seededFromTemplate).toBe(false);
    expect((await migrationStatus(opened.db)).every((m) => m.applied)).toBe(true);
  }, 120_000);

  it("a template made for other migrations or another PGlite, or none, seeds nothing and says why", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "berth-stale-template-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const templateDir = pathToFileURL(`${path.join(dir, "template")}/`);
    const dataDir = path.join(dir, "pgdata");
    expect(await seedFromTemplate(dataDir, templateDir)).toEqual({ seeded: false, why: expect.stringMatching(/^no readable .*manifest\.json$/) });
    const current = await currentManifest();
    await rm(path.join(dir, "template"), { recursive: true, force: true });
    await mkdir(path.join(dir, "template"));
    await copyFile(TEMPLATE_FILE, path.join(dir, "template", "pgdata.tar.gz"));
    await writeFile(path.join(dir, "template", "manifest.json"), JSON.stringify({ ...current, migrations: "0".repeat(64) }));
    const stale = await seedFromTemplate(dataDir, templateDir);
    expect(stale).toEqual({ seeded: false, why: expect.stringContaining(`migrations 000000000000, this code has ${current.pglite} and ${current.migrations.slice(0, 12)}`) });
    await writeFile(path.join(dir, "template", "manifest.json"), JSON.stringify(current));
    expect(await seedFromTemplate(dataDir, templateDir)).toEqual({ seeded: true });
    expect(await readdir(dataDir)).toContain("PG_VERSION");
  });

  it("refuses a tar entry that would leave the directory, and a link", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "berth-tar-"));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await expect(extractTar(Buffer.concat([tarHeader("../escaped", "0"), Buffer.alloc(1024)]), path.join(dir, "x"))).rejects.toThrow(/outside the directory/);
    await expect(extractTar(Buffer.concat([tarHeader("link", "2"), Buffer.alloc(1024)]), path.join(dir, "x"))).rejects.toThrow(/only files and directories/);
    const body = Buffer.alloc(512);
    body.write("abc");
    await extractTar(Buffer.concat([tarHeader("/d", "5"), tarHeader("/d/f", "0", 3), body, Buffer.alloc(1024)]), path.join(dir, "x"));
    expect(await readFile(path.join(dir, "x", "d", "f"), "utf8")).toBe("abc");
  });
});
