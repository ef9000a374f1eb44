/**
 * Makes migrations/template/ (src/platform/pglite-template.ts): a PGlite data directory with
 * every migration applied, dumped as a gzipped tarball, and its manifest. The embedded database's
 * first start copies it instead of running initdb.
 *
 *   npm run -s pglite:template            # regenerate after changing migrations/ or upgrading PGlite
 *   npm run -s pglite:template -- --check # exit 1 when the committed template is stale (CI)
 *
 * The dump is not byte-for-byte reproducible (a cluster has its own system identifier and
 * timestamps); what it holds is: the schema of the migrations the manifest hashes.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { PGliteDialect } from "kysely-pglite-dialect";
import { migrateToLatest } from "../src/platform/migrate.js";
import { committedManifest, currentManifest, MANIFEST_FILE, sameManifest, TEMPLATE_DIR, TEMPLATE_FILE } from "../src/platform/pglite-template.js";
import type { Database } from "../src/platform/schema.js";

const current = await currentManifest();
if (process.argv.includes("--check")) {
  if (sameManifest(await committedManifest(), current)) {
    console.log("migrations/template/ matches the migrations and PGlite");
  } else {
    console.error("migrations/template/ is stale: run 'npm run -s pglite:template' and commit the result");
    process.exitCode = 1;
  }
} else {
  const client = await PGlite.create();
  const db = new Kysely<Database>({ dialect: new PGliteDialect(client) });
  await migrateToLatest(db, (name) => console.log(`applied ${name}`));
  // Everything in the data files, so the copy starts without replaying WAL.
  await client.exec("CHECKPOINT");
  const dump = Buffer.from(await (await client.dumpDataDir("gzip")).arrayBuffer());
  await db.destroy();
  await mkdir(TEMPLATE_DIR, { recursive: true });
  await writeFile(TEMPLATE_FILE, dump);
  await writeFile(MANIFEST_FILE, `${JSON.stringify(current, null, 2)}\n`);
  console.log(`wrote ${TEMPLATE_FILE.pathname} (${(dump.length / 1e6).toFixed(1)} MB) and its manifest`);
}
