import { sql, type Kysely } from "kysely";

/**
 * Issue 29, two columns.
 *
 * claims.not_yet_defined: a claim of a symbol the workspace's version of its file does not define
 * (a reservation: "I am adding parse_header"). Set by ClaimSymbols, kept true to the overlay by the
 * write that adds or removes the symbol (the write statement itself), so ListClaims reads it
 * instead of parsing files. Existing claims were all of defined symbols: false.
 *
 * repositories.independent_review: APPROVED and MERGED must come from a principal other than the
 * changeset's authors (docs/security.md). Existing repositories keep today's rule (false); a
 * repository registered from now on has it unless RegisterRepository opts out (default true).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE claims ADD COLUMN not_yet_defined boolean NOT NULL DEFAULT false`.execute(db);
  await sql`ALTER TABLE repositories ADD COLUMN independent_review boolean NOT NULL DEFAULT false`.execute(db);
  await sql`ALTER TABLE repositories ALTER COLUMN independent_review SET DEFAULT true`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS independent_review`.execute(db);
  await sql`ALTER TABLE claims DROP COLUMN IF EXISTS not_yet_defined`.execute(db);
}
