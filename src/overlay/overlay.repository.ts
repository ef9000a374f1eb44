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

const META_COLUMNS = sql.raw("o.path, o.sha256, o.change, o.base_hash, o.symbols, o.updated_at, octet_length(o.content) AS size");

function metaRow<R extends OverlayMetaRow>(row: R): R {
  return { ...row, size: row.size === null ? null : Number(row.size) };
}

/** workspaces.overlay_version as a number (a counter: never near 2^53). */
function versionOf(v: string | number | bigint | null | undefined): number {
  return v === null || v === undefined ? 0 : Number(v);
}

/**
 * Every overlay row of a workspace without its content (the content is read lazily), and the
 * workspace's overlay_version, from one snapshot: the rows are the state that version names.
 */
export async function loadOverlay(db: Executor, workspaceId: string): Promise<{ version: number; rows: OverlayMetaRow[] }> {
  const r = await sql<{ version: string | number | bigint } & { [K in keyof OverlayMetaRow]: OverlayMetaRow[K] | null }>`
    SELECT w.overlay_version AS version, ${META_COLUMNS}
    FROM workspaces w LEFT JOIN overlay_files o ON o.workspace_id = w.id
    WHERE w.id = ${workspaceId}::uuid ORDER BY o.path`.execute(db);
  const rows: OverlayMetaRow[] = [];
  for (const row of r.rows) {
    if (row.path === null) continue;
    const { version: _version, ...meta } = row;
    rows.push(metaRow(meta as OverlayMetaRow));
  }
  return { version: versionOf(r.rows[0]?.version), rows };
}

/** The workspace's overlay_version: one primary-key lookup (0 when the workspace has no row). */
export async function overlayVersion(db: Executor, workspaceId: string): Promise<number> {
  const r = await sql<{ v: string | number | bigint }>`SELECT overlay_version AS v FROM workspaces WHERE id = ${workspaceId}::uuid`.execute(db);
  return versionOf(r.rows[0]?.v);
}

/** One overlay row with its content (a write decided again under its locks). */
export async function readOverlayRow(db: Executor, workspaceId: string, path: string): Promise<(OverlayMetaRow & { content: Uint8Array | null }) | undefined> {
  const r = await sql<OverlayMetaRow & { content: unknown }>`
    SELECT ${META_COLUMNS}, o.content FROM overlay_files o WHERE o.workspace_id = ${workspaceId}::uuid AND o.path = ${path}`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  return { ...metaRow(row), content: row.content === null ? null : toBytes(row.content) };
}

/**
 * The content of an overlay row if its hash is still `sha256`; undefined when the row is gone or
 * holds something else now (another instance changed it since the caller's cache was made).
 */
export async function readOverlayContent(db: Executor, workspaceId: string, path: string, sha256: string | null): Promise<Uint8Array | null | undefined> {
  const r = await sql<Pick<Selectable<OverlayFileTable>, "content">>`
    SELECT content FROM overlay_files
    WHERE workspace_id = ${workspaceId}::uuid AND path = ${path} AND sha256 IS NOT DISTINCT FROM ${sha256}::text`.execute(db);
  const row = r.rows[0];
  if (!row) return undefined;
  return row.content === null ? null : toBytes(row.content);
}

/** One overlay row named by its keys. */
export interface OverlayRowKey {
  readonly workspaceId: string;
  readonly path: string;
}

/**
 * The content and hash of the named rows that exist, in one statement (the keys travel as one
 * JSON parameter): a batch of a diff's or a landing's files. A row that is gone is missing from
 * the answer; the caller compares the hashes with what it expected.
 */
export async function readOverlayContents(db: Executor, keys: readonly OverlayRowKey[]): Promise<{ workspace_id: string; path: string; sha256: string | null; content: Uint8Array | null }[]> {
  if (keys.length === 0) return [];
  const json = JSON.stringify(keys.map((k) => ({ w: k.workspaceId, p: k.path })));
  const r = await sql<{ workspace_id: string; path: string; sha256: string | null; content: unknown }>`
    SELECT o.workspace_id, o.path, o.sha256, o.content
    FROM jsonb_to_recordset(${json}::jsonb) AS k(w uuid, p text)
    JOIN overlay_files o ON o.workspace_id = k.w AND o.path = k.p`.execute(db);
  return r.rows.map((row) => ({ ...row, content: row.content === null ? null : toBytes(row.content) }));
}

/** What a workspace's overlay holds: rows and content bytes, in all and for one path. */
export interface OverlayUsage {
  readonly files: number;
  readonly bytes: number;
  readonly pathFiles: number;
  readonly pathBytes: number;
}

/**
 * The workspace's counters set from its rows (migrations/0017_overlay_counters.ts): for a
 * statement that rewrites rows one by one (a rebase, which touches every row anyway) and sets
 * them once at its end; a single row's change moves them by its own difference instead.
 */
export function recountedOverlay(workspaceId: string): RawBuilder<unknown> {
  return sql`overlay_files_count = (SELECT count(*) FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid),
    overlay_bytes = (SELECT coalesce(sum(octet_length(content)), 0) FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid)`;
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

/**
 * What the writer believed the path's row was when it decided: absent, or holding `sha256`
 * (null: a deletion tombstone). The statement changes the row only while that is still true.
 */
export type BelievedRow = { readonly exists: false } | { readonly exists: true; readonly sha256: string | null };

/** Deletes every overlay row and recorded read of the workspaces (abandon, destroy), bumping their overlay_version and zeroing their counters. */
export async function deleteOverlaysOf(db: Executor, workspaceIds: readonly string[]): Promise<number> {
  if (workspaceIds.length === 0) return 0;
  const r = await sql<{ n: string | number | bigint }>`
    WITH d AS (DELETE FROM overlay_files WHERE workspace_id = ANY(${uuids(workspaceIds)}) RETURNING workspace_id),
    v AS (UPDATE workspaces SET overlay_version = overlay_version + 1, overlay_files_count = 0, overlay_bytes = 0 WHERE id IN (SELECT workspace_id FROM d)),
    r AS (DELETE FROM overlay_reads WHERE workspace_id = ANY(${uuids(workspaceIds)}))
    SELECT count(*) AS n FROM d`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

/** What writeWithClaims did. */
export interface WriteOutcome {
  /** The symbols newly claimed. */
  readonly inserted: string[];
  /** Other workspaces' claims that stand in the way (nothing was written). */
  readonly blocked: ClaimRow[];
  /** The row was what the writer believed (on the statement's snapshot). */
  readonly believed: boolean;
  /** The row change applied (and with it the claims, the event and the version bump). */
  readonly applied: boolean;
  /** The workspace's overlay_version after the change (applied only). */
  readonly version: number | undefined;
  /** The row's symbols after the change (applied writes; null for a removed row). */
  readonly symbols: string[] | null;
  /** The overlay before the change, as the statement saw it (the workspace's counters and the path's row). */
  readonly usage: OverlayUsage;
}

/**
 * A write's claims, its overlay row change, its file event and the workspace's overlay_version
 * bump in one statement (the caller holds the workspace row FOR NO KEY UPDATE and the path's
 * claim lock, taken by an earlier statement). The row changes only if it is still what the
 * writer believed (compare-and-set: `believed`) and no other workspace's claim stands in the way;
 * the claims, the event and the bump are written only with the row change. Otherwise nothing is
 * written: the blocked claims are returned, or `believed` is false (another instance changed the
 * row since the writer's cache was made) and the caller decides again on the fresh row.
 *
 * The row's symbols are the union of the stored ones and `row.symbols` (cumulative whoever
 * wrote the path before, even a write that left the same hash behind).
 *
 * The workspace's overlay_files_count / overlay_bytes move with the row in the same UPDATE as
 * overlay_version, by the row's own difference (the path's row before, `cur`, and after); the
 * statement returns them as they were before (the quota check): two primary-key reads, whatever
 * the overlay's size. The caller holds the workspace row, so nothing else moves them meanwhile.
 */
export async function writeWithClaims(
  trx: Transaction<Database>,
  claim: {
    repoId: string;
    path: string;
    symbols: readonly string[];
    holder: Holder;
    at: Date;
    /** Symbols the change defines / no longer defines: the holder's claims of them follow (claims.not_yet_defined). */
    defined?: { added: readonly string[]; removed: readonly string[] };
  },
  row: OverlayUpsert | { drop: true; workspaceId: string; path: string },
  believed: BelievedRow,
  event: Insertable<EventTable>,
  /** false: the claims are checked (blocked) but not inserted (a stranded session's capture). */
  take = true,
): Promise<WriteOutcome> {
  const { repoId, path, symbols, holder, at } = claim;
  const added = JSON.stringify(claim.defined?.added ?? []);
  const removed = JSON.stringify(claim.defined?.removed ?? []);
  // A reservation becomes an ordinary claim with the write that defines its symbol, and a claim
  // whose symbol the write removes is one again: the flag stays true to the overlay without a
  // parse at read time. Rows `ins` inserts are not in this statement's snapshot; they are the
  // write's own changes, defined by it (or deleted by it), so they are inserted with the same rule.
  const flags = claim.defined !== undefined && (claim.defined.added.length > 0 || claim.defined.removed.length > 0);
  const workspaceId = row.workspaceId;
  const fileLevel = symbols.includes("");
  const none = sql`NOT EXISTS (SELECT 1 FROM blocked)`;
  const applied = sql`EXISTS (SELECT 1 FROM ch)`;
  const key = sql`workspace_id = ${workspaceId}::uuid AND path = ${row.path}`;
  const sameHash = believed.exists ? sql`sha256 IS NOT DISTINCT FROM ${believed.sha256}::text` : sql`false`;
  const isBelieved = believed.exists ? sql`EXISTS (SELECT 1 FROM cur WHERE ${sameHash})` : sql`NOT EXISTS (SELECT 1 FROM cur)`;
  let change: RawBuilder<unknown>;
  const newFiles = "drop" in row ? 0 : 1;
  const newBytes = "drop" in row ? 0 : (row.content?.byteLength ?? 0);
  if ("drop" in row) {
    change = sql`DELETE FROM overlay_files WHERE ${key} AND ${sameHash} AND ${none} RETURNING NULL::text[] AS symbols`;
  } else {
    const bytes = row.content === null ? null : Buffer.from(row.content.buffer, row.content.byteOffset, row.content.byteLength);
    change = believed.exists
      ? sql`UPDATE overlay_files SET content = ${bytes}::bytea, sha256 = ${row.sha256}::text, change = ${row.change}::text, base_hash = ${row.baseHash}::text,
            symbols = symbols || ARRAY(SELECT s FROM unnest(${textList(row.symbols)}) AS t(s) WHERE s <> ALL(symbols)), updated_at = ${row.at}::timestamptz
          WHERE ${key} AND ${sameHash} AND ${none} RETURNING symbols`
      : sql`INSERT INTO overlay_files (workspace_id, path, repo_id, content, sha256, change, base_hash, symbols, updated_at)
          SELECT ${workspaceId}::uuid, ${row.path}, ${row.repoId}::uuid, ${bytes}::bytea,
                 ${row.sha256}::text, ${row.change}::text, ${row.baseHash}::text, ${textList(row.symbols)}, ${row.at}::timestamptz
          WHERE ${none}
          ON CONFLICT (workspace_id, path) DO NOTHING RETURNING symbols`;
  }
  type Count = string | number | null;
  const r = await sql<
    Selectable<ClaimTable> & { k: string; believed: boolean | null; version: string | number | bigint | null; row_symbols: string[] | null; files: Count; bytes: Count; path_files: Count; path_bytes: Count }
  >`
    WITH wanted AS (SELECT DISTINCT s FROM jsonb_array_elements_text(${JSON.stringify(symbols)}::jsonb) AS t(s)),
    blocked AS (
      SELECT c.* FROM claims c
      WHERE ${symbols.length > 0} AND c.repo_id = ${repoId}::uuid AND c.path = ${path} AND c.workspace_id <> ${holder.workspaceId}::uuid
        AND (c.symbol IN (SELECT s FROM wanted) OR c.symbol = '' OR ${fileLevel})),
    cur AS (SELECT sha256, octet_length(content) AS len FROM overlay_files WHERE ${key}),
    usage AS (SELECT w.overlay_files_count AS files, w.overlay_bytes AS bytes, (SELECT count(*) FROM cur) AS path_files,
      (SELECT coalesce(sum(len), 0) FROM cur) AS path_bytes FROM workspaces w WHERE w.id = ${workspaceId}::uuid),
    ch AS (${change}),
    ins AS (
      INSERT INTO claims (repo_id, path, symbol, workspace_id, session_id, agent_id, agent_name, acquired_at, not_yet_defined)
      SELECT ${repoId}::uuid, ${path}, s, ${holder.workspaceId}::uuid, ${holder.sessionId}::uuid, ${holder.agentId}, ${holder.agentName}, ${at}::timestamptz,
        s <> '' AND s IN (SELECT jsonb_array_elements_text(${removed}::jsonb))
      FROM wanted WHERE ${applied} AND ${take}
      ON CONFLICT (repo_id, path, symbol) DO NOTHING
      RETURNING *),
    res AS (UPDATE claims SET not_yet_defined = symbol IN (SELECT jsonb_array_elements_text(${removed}::jsonb))
      WHERE ${flags} AND workspace_id = ${holder.workspaceId}::uuid AND repo_id = ${repoId}::uuid AND path = ${path} AND symbol <> ''
        AND symbol IN (SELECT jsonb_array_elements_text(${added}::jsonb) UNION ALL SELECT jsonb_array_elements_text(${removed}::jsonb))
        AND ${applied}
      RETURNING 1),
    ver AS (UPDATE workspaces SET overlay_version = overlay_version + 1,
        overlay_files_count = overlay_files_count + ${newFiles}::int8 - (SELECT count(*) FROM cur),
        overlay_bytes = overlay_bytes + ${newBytes}::int8 - (SELECT coalesce(sum(len), 0) FROM cur)
      WHERE id = ${workspaceId}::uuid AND ${applied} RETURNING overlay_version),
    ev AS (${insertEventsFrom(sql`SELECT * FROM (${eventValues([event])}) AS v WHERE ${applied}`)})
    SELECT 'ins' AS k, ins.*, NULL::boolean AS believed, NULL::int8 AS version, NULL::text[] AS row_symbols,
      NULL::int8 AS files, NULL::int8 AS bytes, NULL::int8 AS path_files, NULL::int8 AS path_bytes FROM ins
    UNION ALL SELECT 'blocked' AS k, blocked.*, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM blocked
    UNION ALL SELECT 'state' AS k, c.*, ${isBelieved}, (SELECT overlay_version FROM ver), (SELECT symbols FROM ch), usage.*
      FROM usage LEFT JOIN claims c ON false`.execute(trx);
  const inserted: string[] = [];
  const blocked: ClaimRow[] = [];
  let state: (typeof r.rows)[number] | undefined;
  for (const x of r.rows) {
    const { k, believed: _b, version: _v, row_symbols: _s, files: _f, bytes: _by, path_files: _pf, path_bytes: _pb, ...c } = x;
    if (k === "ins") inserted.push(c.symbol);
    else if (k === "blocked") blocked.push(c);
    else state = x;
  }
  const version = state?.version ?? null;
  return {
    inserted,
    blocked,
    believed: state?.believed === true,
    applied: version !== null,
    version: version === null ? undefined : versionOf(version),
    symbols: state?.row_symbols ?? null,
    usage: { files: Number(state?.files ?? 0), bytes: Number(state?.bytes ?? 0), pathFiles: Number(state?.path_files ?? 0), pathBytes: Number(state?.path_bytes ?? 0) },
  };
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
  cs_version: string | number | bigint;
}

const MODIFIER_COLUMNS = sql.raw(`o.path, o.symbols, o.updated_at, o.change, w.id AS workspace_id, w.session_id, w.agent_id, w.agent_name,
  w.changeset_id, w.lifecycle, c.state AS cs_state, c.updated_at AS cs_updated_at, c.version AS cs_version`);

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


/**
 * The overlay rows of the live (active or stranded) workspaces of a repository for the given
 * paths: what the index has of those paths, checked against PostgreSQL (overlay_files_repo_path).
 * Each row's workspace is looked up by its primary key (the LATERAL subquery, kept apart by
 * OFFSET 0): joined plainly, the planner would take every live workspace through the partial
 * index workspaces_repo_live, whose predicate the lifecycle test matches, and filter them per
 * row (189 index entries read per WriteFile with 64 sessions; as many as live workspaces).
 */
export async function modifiersOfPaths(db: Executor, repoId: string, paths: readonly string[]): Promise<ModifierRow[]> {
  if (paths.length === 0) return [];
  const where = paths.length === 1 ? sql`o.path = ${paths[0]}` : sql`o.path = ANY(${textList(paths)})`;
  const r = await sql<ModifierRow>`
    SELECT ${MODIFIER_COLUMNS}
    FROM overlay_files o
    CROSS JOIN LATERAL (SELECT * FROM workspaces w WHERE w.id = o.workspace_id AND w.lifecycle IN ('active','stranded') OFFSET 0) w
    JOIN changesets c ON c.id = w.changeset_id
    WHERE o.repo_id = ${repoId}::uuid AND ${where}`.execute(db);
  return r.rows;
}

// ---- recorded reads (STALE_OVERLAY across instances) ---------------------------------------

/** Records a ReadFile of a path (the later of the stored and this one). */
export async function recordRead(db: Executor, workspaceId: string, path: string, at: Date): Promise<void> {
  await sql`
    INSERT INTO overlay_reads (workspace_id, path, read_at) VALUES (${workspaceId}::uuid, ${path}, ${at}::timestamptz)
    ON CONFLICT (workspace_id, path) DO UPDATE SET read_at = GREATEST(overlay_reads.read_at, EXCLUDED.read_at)`.execute(db);
}

/** The recorded last ReadFile of a path by a workspace (any instance), if any. */
export async function lastRead(db: Executor, workspaceId: string, path: string): Promise<Date | undefined> {
  const r = await sql<{ read_at: Date }>`
    SELECT read_at FROM overlay_reads WHERE workspace_id = ${workspaceId}::uuid AND path = ${path}`.execute(db);
  return r.rows[0]?.read_at;
}
