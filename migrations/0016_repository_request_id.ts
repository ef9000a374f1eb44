import { sql, type Kysely } from "kysely";

/**
 * repositories.request_id: the client's RegisterRepository `request_id`, so that a retry of a
 * registration that succeeded (its answer lost) gets the repository instead of ALREADY_EXISTS.
 * NULL when the call gave none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories ADD COLUMN request_id text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS request_id`.execute(db);
}
