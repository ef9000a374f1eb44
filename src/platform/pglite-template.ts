/**
 * The embedded database's first start from a template (issue 16): PGlite's initdb (a second
 * WebAssembly PostgreSQL running bootstrap mode) takes 10–23 s on 2 cores, loading a dumped
 * data directory a few. migrations/template/ holds such a dump, already migrated, made by
 * scripts/pglite-template.ts, and a manifest saying what it was made from: the PGlite version and
 * a hash of every file under migrations/. A template whose manifest does not match the code is
 * not used (the start runs initdb and migrates, as without one) and fails
 * test/platform/pglite-template.test.ts, which CI runs: regenerate it with the script.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, rmdir } from "node:fs/promises";
import path from "node:path";
import { gunzipSync } from "node:zlib";
import { extractTar } from "./tar.js";

const MIGRATIONS_DIR = new URL("../../migrations/", import.meta.url);
export const TEMPLATE_DIR = new URL("template/", MIGRATIONS_DIR);
export const TEMPLATE_FILE = new URL("pgdata.tar.gz", TEMPLATE_DIR);
export const MANIFEST_FILE = new URL("manifest.json", TEMPLATE_DIR);

export interface TemplateManifest {
  /** The @electric-sql/pglite version that made the data directory (its PostgreSQL reads it). */
  readonly pglite: string;
  /** sha256 over the name and content of every migration source (the schema the template has). */
  readonly migrations: string;
}

/** The manifest a template made from this code would have. */
export async function currentManifest(): Promise<TemplateManifest> {
  const pkg = new URL("../package.json", import.meta.resolve("@electric-sql/pglite"));
  const { version } = JSON.parse(await readFile(pkg, "utf8")) as { version: string };
  const hash = createHash("sha256");
  const names = (await readdir(MIGRATIONS_DIR)).filter((n) => n.endsWith(".ts")).sort();
  for (const name of names) {
    hash.update(`${name}\0`);
    hash.update(await readFile(new URL(name, MIGRATIONS_DIR)));
    hash.update("\0");
  }
  return { pglite: version, migrations: hash.digest("hex") };
}

/** The committed manifest; undefined when there is none (or it is unreadable). */
export async function committedManifest(dir: URL = TEMPLATE_DIR): Promise<TemplateManifest | undefined> {
  try {
    return JSON.parse(await readFile(new URL("manifest.json", dir), "utf8")) as TemplateManifest;
  } catch {
    return undefined;
  }
}

export function sameManifest(a: TemplateManifest | undefined, b: TemplateManifest): boolean {
  return a !== undefined && a.pglite === b.pglite && a.migrations === b.migrations;
}

/** The template's tarball (gzip) when it matches this code; otherwise why not, for the log. */
async function freshTemplate(dir: URL): Promise<{ tarball: Buffer } | { why: string }> {
  const [committed, current] = await Promise.all([committedManifest(dir), currentManifest()]);
  if (committed === undefined) return { why: `no readable ${new URL("manifest.json", dir).pathname}` };
  if (!sameManifest(committed, current)) {
    return { why: `the template was made for PGlite ${committed.pglite} and migrations ${committed.migrations.slice(0, 12)}, this code has ${current.pglite} and ${current.migrations.slice(0, 12)}` };
  }
  const file = new URL("pgdata.tar.gz", dir);
  try {
    return { tarball: await readFile(file) };
  } catch (err) {
    return { why: `${file.pathname} unreadable: ${(err as Error).message}` };
  }
}

/**
 * Makes `dataDir` (absent or empty) a copy of the template, when there is a fresh one; says
 * whether it did, or why not (the start then runs PGlite's initdb, which is slow). Extracted
 * beside it and renamed into place, so that a start interrupted half-way leaves no half a
 * cluster for the next one to resume (it seeds again).
 */
export async function seedFromTemplate(dataDir: string, templateDir: URL = TEMPLATE_DIR): Promise<{ seeded: true } | { seeded: false; why: string }> {
  const template = await freshTemplate(templateDir);
  if (!("tarball" in template)) return { seeded: false, why: template.why };
  const staging = `${dataDir}.seed-${randomBytes(4).toString("hex")}`;
  try {
    await mkdir(staging, { recursive: true });
    await extractTar(gunzipSync(template.tarball), staging);
    await rmdir(dataDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err; // ENOTEMPTY: not ours to replace
    });
    await rename(staging, dataDir);
    return { seeded: true };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Whether `dataDir` holds a cluster already (PGlite resumes it). */
export async function hasCluster(dataDir: string): Promise<boolean> {
  try {
    await readFile(path.join(dataDir, "PG_VERSION"));
    return true;
  } catch {
    return false;
  }
}
