/**
 * Every SQL statement of the overlay (migrations/0004_overlay.ts); the claims' are in
 * src/claims/claims.repository.ts. Lists of text (paths, symbols) travel as one JSON parameter,
 * which PostgreSQL and PGlite both accept.
 */
import { sql, type Insertable, type Kysely, type RawBuilder, type Selectable, type Transaction } from "kysely";
import type { ChangesetStateName, ClaimTable, Database, EventTable, FileChangeName, LifecycleName, OverlayFileTable } from "../platform/schema.js";
import { uuids, type ClaimRow, type Holder } from "../claims/claims.repository.js";
import { eventValues, insertEventsFrom } from "../platform/outbox.js";

export type { ClaimRow, Holder };

function textList(values: readonly string[]): RawBuilder<unknown> {
  return sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;
}

type Executor = Kysely<Database> | Transaction<Database>;

export type ChangeName = FileChangeName;

/** Bytes as pg and PGlite return them (Buffer or Uint8Array) → a plain Uint8Array view. */
export function toBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v;
  throw new Error("expected bytea");
}

// ---- overlay rows -------------------------------------------------------------------------

/** An overlay_files row without its keys and content, with the content's size (NULL for a tombstone). */
export type OverlayMetaRow = Pick<Selectable<OverlayFileTable>, "path" | "sha256" | "change" | "base_hash" | "symbols" | "updated_at"> & {
  size: number | null;
};

/** Every overlay row of a workspace without its content (the content is read lazily). */
export async function listOverlayMeta(db: Executor, workspaceId: string): Promise<OverlayMetaRow[]> {
  const r = await sql<OverlayMetaRow>`
    SELECT path, sha256, change, base_hash, symbols, updated_at, octet_length(content) AS size
    FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid ORDER BY path`.execute(db);
  return r.rows.map((row) => ({ ...row, size: row.size === null ? null : Number(row.size) }));
}

export async function readOverlayContent(db: Executor, workspaceId: string, path: string): Promise<Uint8Array | null | undefined> {
  const r = await sql<Pick<Selectable<OverlayFileTable>, "content">>`
    SELECT content FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid AND path = ${path}`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  return row.content === null ? null : toBytes(row.content);
}

export interface OverlayUpsert {
  workspaceId: string;
  repoId: string;
  path: string;
  content: Uint8Array | null;
  sha256: string | null;
  change: ChangeName;
  baseHash: string | null;
  symbols: readonly string[];
  at: Date;
}

/** Deletes every overlay row of the workspaces (abandon, destroy). */
export async function deleteOverlaysOf(db: Executor, workspaceIds: readonly string[]): Promise<number> {
  if (workspaceIds.length === 0) return 0;
  const r = await sql`DELETE FROM overlay_files WHERE workspace_id = ANY(${uuids(workspaceIds)})`.execute(db);
  return Number(r.numAffectedRows ?? 0n);
}

/**
 * A write's claims, its overlay row change and its file event in one statement (the caller holds
 * the path's claim lock, taken by an earlier statement). When another workspace's claim stands in
 * the way nothing is written (claims, row, event): the blocked claims are returned and the caller
 * rolls back. Returns the symbols newly claimed and the blocking claims, as claimOnPath does.
 */
export async function writeWithClaims(
  trx: Transaction<Database>,
  claim: { repoId: string; path: string; symbols: readonly string[]; holder: Holder; at: Date },
  row: OverlayUpsert | { drop: true; workspaceId: string; path: string },
  event: Insertable<EventTable>,
): Promise<{ inserted: string[]; blocked: ClaimRow[] }> {
  const { repoId, path, symbols, holder, at } = claim;
  const fileLevel = symbols.includes("");
  const none = sql`NOT EXISTS (SELECT 1 FROM blocked)`;
  const change =
    "drop" in row
      ? sql`DELETE FROM overlay_files WHERE workspace_id = ${row.workspaceId}::uuid AND path = ${row.path} AND ${none}`
      : sql`INSERT INTO overlay_files (workspace_id, path, repo_id, content, sha256, change, base_hash, symbols, updated_at)
          SELECT ${row.workspaceId}::uuid, ${row.path}, ${row.repoId}::uuid, ${row.content === null ? null : Buffer.from(row.content.buffer, row.content.byteOffset, row.content.byteLength)}::bytea,
                 ${row.sha256}::text, ${row.change}::text, ${row.baseHash}::text, ${textList(row.symbols)}, ${row.at}::timestamptz
          WHERE ${none}
          ON CONFLICT (workspace_id, path) DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, change = EXCLUDED.change,
            base_hash = EXCLUDED.base_hash, symbols = EXCLUDED.symbols, updated_at = EXCLUDED.updated_at`;
  const r = await sql<Selectable<ClaimTable> & { k: string }>`
    WITH wanted AS (SELECT DISTINCT s FROM jsonb_array_elements_text(${JSON.stringify(symbols)}::jsonb) AS t(s)),
    blocked AS (
      SELECT c.* FROM claims c
      WHERE ${symbols.length > 0} AND c.repo_id = ${repoId}::uuid AND c.path = ${path} AND c.workspace_id <> ${holder.workspaceId}::uuid
        AND (c.symbol IN (SELECT s FROM wanted) OR c.symbol = '' OR ${fileLevel})),
    ins AS (
      INSERT INTO claims (repo_id, path, symbol, workspace_id, session_id, agent_id, agent_name, acquired_at)
      SELECT ${repoId}::uuid, ${path}, s, ${holder.workspaceId}::uuid, ${holder.sessionId}::uuid, ${holder.agentId}, ${holder.agentName}, ${at}::timestamptz
      FROM wanted WHERE ${none}
      ON CONFLICT (repo_id, path, symbol) DO NOTHING
      RETURNING *),
    ch AS (${change}),
    ev AS (${insertEventsFrom(sql`SELECT * FROM (${eventValues([event])}) AS v WHERE ${none}`)})
    SELECT 'ins' AS k, * FROM ins UNION ALL SELECT 'blocked' AS k, * FROM blocked`.execute(trx);
  const inserted: string[] = [];
  const blocked: ClaimRow[] = [];
  for (const x of r.rows) {
    const { k, ...c } = x;
    if (k === "ins") inserted.push(c.symbol);
    else blocked.push(c);
  }
  return { inserted, blocked };
}

// ---- the modifiers index ------------------------------------------------------------------

export interface ModifierRow {
  path: string;
  symbols: string[];
  updated_at: Date;
  change: ChangeName;
  workspace_id: string;
  session_id: string;
  agent_id: string;
  agent_name: string;
  changeset_id: string;
  lifecycle: LifecycleName;
  cs_state: ChangesetStateName;
  cs_updated_at: Date;
}

const MODIFIER_COLUMNS = sql.raw(`o.path, o.symbols, o.updated_at, o.change, w.id AS workspace_id, w.session_id, w.agent_id, w.agent_name,
  w.changeset_id, w.lifecycle, c.state AS cs_state, c.updated_at AS cs_updated_at`);

/** Every overlay path of the live (active or stranded) workspaces of a repository. */
export async function modifiersOfRepo(db: Executor, repoId: string): Promise<ModifierRow[]> {
  const r = await sql<ModifierRow>`
    SELECT ${MODIFIER_COLUMNS}
    FROM overlay_files o JOIN workspaces w ON w.id = o.workspace_id JOIN changesets c ON c.id = w.changeset_id
    WHERE o.repo_id = ${repoId}::uuid AND w.lifecycle IN ('active','stranded')`.execute(db);
  return r.rows;
}

/** The overlay paths of one workspace with its metadata (an event from another instance). */
export async function modifiersOfWorkspacePath(db: Executor, workspaceId: string, path: string): Promise<ModifierRow | undefined> {
  const r = await sql<ModifierRow>`
    SELECT ${MODIFIER_COLUMNS}
    FROM overlay_files o JOIN workspaces w ON w.id = o.workspace_id JOIN changesets c ON c.id = w.changeset_id
    WHERE o.workspace_id = ${workspaceId}::uuid AND o.path = ${path}`.execute(db);
  return r.rows[0];
}

