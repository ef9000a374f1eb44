/**
 * Every SQL statement of the symbol claims (migrations/0004_overlay.ts): taking them under the
 * path's claim lock, releasing them, and the row lock every change of a session's files takes.
 */
import { sql, type Kysely, type RawBuilder, type Selectable, type Transaction } from "kysely";
import type { ChangesetStateName, ClaimTable, Database, LifecycleName, WorkspaceTable } from "../platform/schema.js";

type Executor = Kysely<Database> | Transaction<Database>;

export function uuids(ids: readonly string[]): RawBuilder<unknown> {
  return sql`${`{${ids.join(",")}}`}::uuid[]`;
}

/**
 * The state a write needs, with the workspace and its changeset locked and then the paths' claim
 * locks taken (sorted), in one statement: the lateral join runs only on the row the locking
 * subquery returned, so the order is the same as two statements (row, then paths). The claim
 * check must be a later statement (its snapshot must postdate the claim locks).
 *
 * The changeset is locked FOR SHARE. The workspace row is locked FOR SHARE for claims alone
 * ("claims"), and FOR NO KEY UPDATE for a change of the overlay ("overlay"): that statement bumps
 * workspaces.overlay_version, and two writers holding the row FOR SHARE would deadlock on the
 * bump; so overlay changes of one workspace take turns across instances (they already did within
 * one), and a strand, abandon or terminal transition still waits for the write either way.
 * The row's overlay_version as locked tells a write whether its cache of the overlay is still
 * the whole truth (the file-or-directory check, src/overlay/path-shape.ts).
 */
export async function lockForWrite(
  trx: Transaction<Database>,
  workspaceId: string,
  lockKeys: readonly string[],
  purpose: "claims" | "overlay",
): Promise<{ lifecycle: LifecycleName; session_id: string; state: ChangesetStateName; overlay_version: string | number } | undefined> {
  const sorted = [...new Set(lockKeys)].sort();
  const rowLock = purpose === "overlay" ? sql`FOR NO KEY UPDATE OF w FOR SHARE OF c` : sql`FOR SHARE OF w, c`;
  const r = await sql<{ lifecycle: LifecycleName; session_id: string; state: ChangesetStateName; overlay_version: string | number }>`
    SELECT r.lifecycle, r.session_id, r.state, r.overlay_version
    FROM (SELECT w.lifecycle, w.session_id, c.state, w.overlay_version FROM workspaces w JOIN changesets c ON c.id = w.changeset_id
          WHERE w.id = ${workspaceId}::uuid ${rowLock}) r
    CROSS JOIN LATERAL (
      SELECT count(pg_advisory_xact_lock(hashtextextended(k, 7))) AS locked
      FROM (SELECT k FROM jsonb_array_elements_text(${JSON.stringify(sorted)}::jsonb) WITH ORDINALITY AS t(k, n)
            WHERE r.lifecycle IS NOT NULL ORDER BY n) keys) l`.execute(trx);
  return r.rows[0];
}

export function claimLockKey(repoId: string, path: string): string {
  return `claim:${repoId}:${path}`;
}

// ---- claims -------------------------------------------------------------------------------

/** A claims row; `changeset_id` is present when the statement joined the holder's workspace (releaseClaimsOf). */
export type ClaimRow = Selectable<ClaimTable> & Partial<Pick<Selectable<WorkspaceTable>, "changeset_id">>;

export interface Holder {
  readonly workspaceId: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly agentName: string;
}

/**
 * Claims `symbols` of one path for `holder` (the caller holds the path's claim lock). Returns
 * the symbols newly claimed and the claims of other workspaces that stand in the way: the same
 * symbol, or — file-level ('') against any symbol and any symbol against file-level. The
 * symbols in `reserved` are not defined by the holder's file yet: inserted as reservations
 * (not_yet_defined); a claim the holder already has keeps its flag, which writes keep true.
 */
export async function claimOnPath(
  trx: Transaction<Database>,
  repoId: string,
  path: string,
  symbols: readonly string[],
  holder: Holder,
  at: Date,
  reserved: readonly string[] = [],
): Promise<{ inserted: string[]; blocked: ClaimRow[] }> {
  if (symbols.length === 0) return { inserted: [], blocked: [] };
  const fileLevel = symbols.includes("");
  const r = await sql<Selectable<ClaimTable> & { k: string }>`
    WITH wanted AS (SELECT DISTINCT s FROM jsonb_array_elements_text(${JSON.stringify(symbols)}::jsonb) AS t(s)),
    blocked AS (
      SELECT c.* FROM claims c
      WHERE c.repo_id = ${repoId}::uuid AND c.path = ${path} AND c.workspace_id <> ${holder.workspaceId}::uuid
        AND (c.symbol IN (SELECT s FROM wanted) OR c.symbol = '' OR ${fileLevel})),
    ins AS (
      INSERT INTO claims (repo_id, path, symbol, workspace_id, session_id, agent_id, agent_name, acquired_at, not_yet_defined)
      SELECT ${repoId}::uuid, ${path}, s, ${holder.workspaceId}::uuid, ${holder.sessionId}::uuid, ${holder.agentId}, ${holder.agentName}, ${at},
        s IN (SELECT jsonb_array_elements_text(${JSON.stringify(reserved)}::jsonb))
      FROM wanted WHERE NOT EXISTS (SELECT 1 FROM blocked)
      ON CONFLICT (repo_id, path, symbol) DO NOTHING
      RETURNING *)
    SELECT 'ins' AS k, * FROM ins UNION ALL SELECT 'blocked' AS k, * FROM blocked`.execute(trx);
  const inserted: string[] = [];
  const blocked: ClaimRow[] = [];
  for (const row of r.rows) {
    const { k, ...claim } = row;
    if (k === "ins") inserted.push(claim.symbol);
    else blocked.push(claim);
  }
  return { inserted, blocked };
}

export async function claimsOfWorkspace(db: Executor, workspaceId: string): Promise<ClaimRow[]> {
  const r = await sql<Selectable<ClaimTable>>`SELECT * FROM claims WHERE workspace_id = ${workspaceId}::uuid ORDER BY path, symbol`.execute(db);
  return r.rows;
}

/** Releases some claims of a workspace ((path, symbol) pairs), returning those released. */
export async function releaseClaims(db: Executor, workspaceId: string, refs: readonly { path: string; symbol: string }[]): Promise<ClaimRow[]> {
  if (refs.length === 0) return [];
  const r = await sql<Selectable<ClaimTable>>`
    DELETE FROM claims c USING (SELECT x->>0 AS path, x->>1 AS symbol FROM jsonb_array_elements(${JSON.stringify(refs.map((x) => [x.path, x.symbol]))}::jsonb) AS t(x)) AS r
    WHERE c.workspace_id = ${workspaceId}::uuid AND c.path = r.path AND c.symbol = r.symbol
    RETURNING c.*`.execute(db);
  return r.rows;
}

/** Releases every claim of the workspaces (strand, abandon, destroy, ReleaseSymbols with no symbols). */
export async function releaseClaimsOf(db: Executor, workspaceIds: readonly string[]): Promise<ClaimRow[]> {
  if (workspaceIds.length === 0) return [];
  const r = await sql<Selectable<ClaimTable> & Pick<Selectable<WorkspaceTable>, "changeset_id">>`
    DELETE FROM claims c USING workspaces w WHERE c.workspace_id = ANY(${uuids(workspaceIds)}) AND w.id = c.workspace_id
    RETURNING c.*, w.changeset_id`.execute(db);
  return r.rows;
}

/** Releases every claim of the workspaces working on a changeset (TransitionChangeset). */
export async function releaseClaimsOfChangeset(db: Executor, changesetId: string): Promise<ClaimRow[]> {
  const r = await sql<Selectable<ClaimTable>>`
    DELETE FROM claims WHERE workspace_id IN (SELECT id FROM workspaces WHERE changeset_id = ${changesetId}::uuid) RETURNING *`.execute(db);
  return r.rows;
}

/** Releases the claims one session of a workspace holds (strand, before the workspace row changes). */
export async function releaseClaimsOfSession(db: Executor, workspaceId: string, sessionId: string): Promise<ClaimRow[]> {
  const r = await sql<Selectable<ClaimTable>>`
    DELETE FROM claims WHERE workspace_id = ${workspaceId}::uuid AND session_id = ${sessionId}::uuid RETURNING *`.execute(db);
  return r.rows;
}
