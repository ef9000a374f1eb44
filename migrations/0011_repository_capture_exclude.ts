import { sql, type Kysely } from "kysely";

/**
 * repositories.capture_exclude: patterns (gitignore syntax, from the repository root) that a
 * turn's capture leaves out besides the environment's own .gitignore files (docs/turns.md,
 * "Nothing written is lost"). Set at RegisterRepository; empty by default, so existing
 * repositories capture as before apart from their .gitignore.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories ADD COLUMN capture_exclude text[] NOT NULL DEFAULT '{}'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS capture_exclude`.execute(db);
}
