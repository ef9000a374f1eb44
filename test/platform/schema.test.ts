/**
 * src/platform/schema.ts against the migrated database: every table the migrations create is
 * typed, with exactly the columns it has. TABLE_COLUMNS is checked against the interfaces at
 * compile time; this compares it with information_schema, so a migration that adds a table or
 * a column without typing it (or a list naming a column the database lacks) fails here.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TABLE_COLUMNS } from "../../src/platform/schema.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/database.js";

/** Kysely's migrator's own bookkeeping, not Berth's schema. */
const MIGRATOR_TABLES = new Set(["kysely_migration", "kysely_migration_lock"]);

describe.each(DATABASE_KINDS)("schema.ts on %s", (kind) => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
  }, 60_000);
  afterAll(async () => {
    await database?.drop();
  });

  it("types every table the migrations create, with exactly its columns", async () => {
    const r = await sql<{ table_name: string; column_name: string }>`
      SELECT table_name, column_name FROM information_schema.columns
      WHERE table_schema = current_schema()`.execute(database.opened.db);
    const actual: Record<string, string[]> = {};
    for (const { table_name, column_name } of r.rows) {
      if (MIGRATOR_TABLES.has(table_name)) continue;
      (actual[table_name] ??= []).push(column_name);
    }
    const sorted = (lists: Record<string, readonly string[]>) =>
      Object.fromEntries(Object.entries(lists).map(([table, columns]) => [table, [...columns].sort()]));
    expect(Object.keys(actual).length).toBeGreaterThan(0);
    // The diff names the table and the column that is untyped (or typed but not in the database).
    expect(sorted(TABLE_COLUMNS)).toEqual(sorted(actual));
  });
});
