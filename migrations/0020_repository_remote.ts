import { sql, type Kysely } from "kysely";

/**
 * repositories.remote_url: a repository on a git server (issue 28), registered with the URL
 * every instance fetches from and pushes to (each through a mirror of its own under its data
 * directory; docs/landing-work.md, "Repositories on a git server"). A repository has a
 * source_path, a remote_url, or neither, never both. The URL never holds credentials:
 * RegisterRepository refuses one with a user name or password in it (docs/security.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories ADD COLUMN remote_url text`.execute(db);
  await sql`ALTER TABLE repositories ADD CONSTRAINT repositories_one_location CHECK (source_path IS NULL OR remote_url IS NULL)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE repositories DROP CONSTRAINT IF EXISTS repositories_one_location`.execute(db);
  await sql`ALTER TABLE repositories DROP COLUMN IF EXISTS remote_url`.execute(db);
}
