import { sql, type Kysely } from "kysely";

/**
 * turns.exit_code, exit_signal and commit_messages: what EndTurn recorded of the turn's command
 * (its exit status or the signal that killed it, as the client reported them) and the messages of
 * the commits the agent made in its environment (docs/turns.md, "What a turn records"). NULL when
 * not reported (an older client) or the turn was not ended by EndTurn: absent, never 0. Nullable
 * columns without a default: ADD COLUMN rewrites nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns ADD COLUMN exit_code integer, ADD COLUMN exit_signal text, ADD COLUMN commit_messages text[]`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE turns DROP COLUMN IF EXISTS exit_code, DROP COLUMN IF EXISTS exit_signal, DROP COLUMN IF EXISTS commit_messages`.execute(db);
}
