import { sql, type Kysely } from "kysely";

/**
 * Claims of a workspace that leaves 'active' were deleted by a trigger (0004_overlay), silently:
 * no claim.released event on the GC, abandon and reconcile paths. Berth now releases them in the
 * same transaction through the sessions layer's exit hooks (src/claims/claim-rules.ts), which
 * report each release; the trigger would delete them first and leave nothing to report.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TRIGGER IF EXISTS workspaces_release_claims ON workspaces`.execute(db);
  await sql`DROP FUNCTION IF EXISTS release_claims_of_inactive()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE FUNCTION release_claims_of_inactive() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM claims c USING changed_rows n WHERE c.workspace_id = n.id AND n.lifecycle <> 'active';
      RETURN NULL;
    END $$`.execute(db);
  await sql`
    CREATE TRIGGER workspaces_release_claims AFTER UPDATE ON workspaces
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION release_claims_of_inactive()`.execute(db);
}
