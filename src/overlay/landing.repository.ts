/** The SQL of landing (src/overlay/landing.ts): what a commit is built from, and where it is recorded. */
import { sql, type Kysely, type Transaction } from "kysely";
import type { ChangesetStateName, Database, FileChangeName } from "../platform/schema.js";

type Executor = Kysely<Database> | Transaction<Database>;

export interface LandingChangeset {
  readonly id: string;
  readonly repo_id: string;
  readonly state: ChangesetStateName;
  readonly reason: string;
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly commit_id: string | null;
  readonly committed_at: Date | null;
}

const CHANGESET_COLUMNS = sql.raw("id, repo_id, state, reason, created_at, updated_at, commit_id, committed_at");

export async function findLandingChangeset(db: Executor, id: string, lock: "update" | "none" = "none"): Promise<LandingChangeset | undefined> {
  const r = await sql<LandingChangeset>`SELECT ${CHANGESET_COLUMNS} FROM changesets WHERE id = ${id}::uuid ${lock === "update" ? sql`FOR UPDATE` : sql``}`.execute(db);
  return r.rows[0];
}

export async function recordCommit(db: Executor, id: string, commitId: string, at: Date): Promise<LandingChangeset> {
  const r = await sql<LandingChangeset>`UPDATE changesets SET commit_id = ${commitId}, committed_at = ${at} WHERE id = ${id}::uuid RETURNING ${CHANGESET_COLUMNS}`.execute(db);
  return r.rows[0]!;
}

/** Where a MERGED transition merged the changeset (GetChangeset's merged_into), in the transition's transaction. */
export async function recordMergedInto(db: Executor, id: string, targetRef: string): Promise<void> {
  await sql`UPDATE changesets SET merged_into = ${targetRef} WHERE id = ${id}::uuid`.execute(db);
}

/** A live (active or stranded) session of the changeset: its base and intent. */
export interface ChangesetSession {
  readonly workspace_id: string;
  readonly session_id: string;
  readonly base_commit: string;
  readonly intent: string;
}

/** One overlay row of one of those sessions, without its content (its size instead; NULL for a deletion). */
export interface ChangesetOverlayRow {
  readonly workspace_id: string;
  readonly path: string;
  readonly change: FileChangeName;
  readonly sha256: string | null;
  readonly size: number | null;
  readonly updated_at: Date;
}

/**
 * The live sessions of a changeset and their overlay rows, without content (a landing decides on
 * these, then streams the content: readOverlayContents). Two statements: a session that ends
 * between them has no rows left and contributes nothing, which is what its end means.
 */
export async function changesetOverlay(db: Executor, changesetId: string): Promise<{ sessions: ChangesetSession[]; rows: ChangesetOverlayRow[] }> {
  const sessions = await sql<ChangesetSession>`
    SELECT id AS workspace_id, session_id, base_commit, intent FROM workspaces
    WHERE changeset_id = ${changesetId}::uuid AND lifecycle IN ('active', 'stranded') ORDER BY created_at, id`.execute(db);
  const rows = await sql<ChangesetOverlayRow>`
    SELECT o.workspace_id, o.path, o.change, o.sha256, octet_length(o.content) AS size, o.updated_at
    FROM overlay_files o JOIN workspaces w ON w.id = o.workspace_id
    WHERE w.changeset_id = ${changesetId}::uuid AND w.lifecycle IN ('active', 'stranded') ORDER BY o.path, o.workspace_id`.execute(db);
  return {
    sessions: sessions.rows,
    rows: rows.rows.map((r) => ({ ...r, size: r.size === null ? null : Number(r.size), updated_at: new Date(r.updated_at) })),
  };
}
