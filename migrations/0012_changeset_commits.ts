import { sql, type Kysely } from "kysely";

/**
 * changesets.commit_id / committed_at: the commit CommitChangeset (or a MERGED transition) last
 * wrote for the changeset into its repository (docs/landing-work.md). NULL until then.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE changesets ADD COLUMN commit_id text, ADD COLUMN committed_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE changesets DROP COLUMN IF EXISTS commit_id, DROP COLUMN IF EXISTS committed_at`.execute(db);
}
