import { sql, type Kysely } from "kysely";

/**
 * turns.captured_paths: what EndTurn captured into the overlay, so that a retried EndTurn (its
 * first answer lost on the way, say through an instance that died after forwarding it) is
 * answered as the first one was, from any instance. NULL for turns not ended by EndTurn.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns ADD COLUMN captured_paths text[]`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns DROP COLUMN IF EXISTS captured_paths`.execute(db);
}
