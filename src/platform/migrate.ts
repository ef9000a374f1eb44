/**
 * Applies migrations/ with Kysely's Migrator. A database that has run a migration this code
 * does not know was written by a newer Berth: we refuse to start rather than guess.
 */
import { Migrator, type MigrationResult } from "kysely";
import { migrations } from "../../migrations/index.js";
import type { Db } from "./database.js";

export class SchemaTooNewError extends Error {
  constructor(readonly unknown: readonly string[]) {
    super(`the database has migrations this version of Berth does not know (${unknown.join(", ")}); it was migrated by a newer Berth. Upgrade Berth or restore a backup.`);
    this.name = "SchemaTooNewError";
  }
}

function migrator(db: Db): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

export interface MigrationStatus {
  readonly name: string;
  readonly applied: boolean;
}

export async function migrationStatus(db: Db): Promise<MigrationStatus[]> {
  const list = await migrator(db).getMigrations();
  return list.map((m) => ({ name: m.name, applied: m.executedAt !== undefined }));
}

async function executedNames(db: Db): Promise<string[]> {
  try {
    const rows = await db
      .selectFrom("kysely_migration" as never)
      .select("name" as never)
      .execute();
    return (rows as unknown as { name: string }[]).map((r) => r.name);
  } catch (err) {
    // 42P01: undefined_table — a fresh database.
    if ((err as { code?: string }).code === "42P01" || /does not exist/.test(String(err))) return [];
    throw err;
  }
}

/** The names the database has run; refused when one is unknown to this code. */
async function executedKnownNames(db: Db): Promise<Set<string>> {
  const known = new Set(Object.keys(migrations));
  const executed = await executedNames(db);
  const unknown = executed.filter((n) => !known.has(n));
  if (unknown.length > 0) throw new SchemaTooNewError(unknown);
  return new Set(executed);
}

export async function assertNotNewer(db: Db): Promise<void> {
  await executedKnownNames(db);
}

/** Applies pending migrations; calls onApplied for each as it completes. */
export async function migrateToLatest(db: Db, onApplied: (name: string) => void = () => {}): Promise<MigrationResult[]> {
  const executed = await executedKnownNames(db);
  // Nothing pending (every start but the first): the Migrator is skipped, as it would introspect
  // the catalog (every table's columns) to create its tables and take its lock: ~1 s on PGlite.
  if (Object.keys(migrations).every((n) => executed.has(n))) return [];
  const { error, results = [] } = await migrator(db).migrateToLatest();
  for (const r of results) if (r.status === "Success") onApplied(r.migrationName);
  if (error) {
    const failed = results.find((r) => r.status === "Error");
    throw new Error(`migration ${failed?.migrationName ?? "?"} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return results;
}
