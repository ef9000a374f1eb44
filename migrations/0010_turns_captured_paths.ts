import { sql, type Kysely } from "kysely";

/**
 * turns.captured_paths and left_out: what EndTurn captured into the overlay (and left out on
 * purpose), so that a retried EndTurn (its
 * first answer lost on the way, say through an instance that died after forwarding it) is
 * answered as the first one was, from any instance. NULL for turns not ended by EndTurn.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns ADD COLUMN captured_paths text[], ADD COLUMN left_out jsonb`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns DROP COLUMN IF EXISTS captured_paths, DROP COLUMN IF EXISTS left_out`.execute(db);
}
