/**
 * Every SQL statement of the session lifecycle: set-based (one statement per batch of rows, never
 * a loop of round trips), each a compare-and-set on `lifecycle` so that racing writers (two
 * resumers, resume against abandon, two instances reconciling) get exactly one outcome.
 *
 * Raw SQL; the rows it reads and writes (workspaces, changesets, instances of
 * migrations/0002_lifecycle.ts) are typed in src/platform/schema.ts.
 */
import { sql, type Kysely, type RawBuilder, type Selectable, type Transaction } from "kysely";
import { insertEventsFrom } from "../platform/outbox.js";
import { TERMINAL_STATES } from "./changeset-states.js";
import type { ChangesetStateName, Database, WorkspaceTable } from "../platform/schema.js";
import type { ChangesetRow } from "./registry.repository.js";

type Executor = Kysely<Database> | Transaction<Database>;

// The SQL form of the one list of terminal states (changeset-states.ts), never a literal copy.
const TERMINAL = sql.raw(`(${[...TERMINAL_STATES].map((st) => `'${st}'`).join(",")})`);

/** The columns an event about a workspace needs. */
export type LifecycleRow = Pick<Selectable<WorkspaceTable>, "id" | "session_id" | "repo_id" | "agent_id" | "changeset_id" | "mode">;

const RETURNING = sql.raw(`w.id, w.session_id, w.repo_id, w.agent_id, w.changeset_id, w.mode`);

/**
 * The workspaces rows a multi-row UPDATE is about to change, locked in id order first. Every
 * multi-row writer of workspaces locks through this (the activity flush of every instance, GC,
 * every instance's orphan reconcile), so two of them may wait for each other but never in a
 * cycle: without it, their UPDATEs locked rows in whatever order their plans met them, and
 * deadlocked under load (the chaos test). `from` is a FROM list that names the rows `w`.
 */
function lockedInOrder(from: RawBuilder<unknown>, where: RawBuilder<unknown>, columns: RawBuilder<unknown> = sql`w.id`): RawBuilder<unknown> {
  return sql`(SELECT ${columns} FROM ${from} WHERE ${where} ORDER BY w.id FOR NO KEY UPDATE OF w)`;
}

function uuids(ids: readonly string[]): RawBuilder<unknown> {
  return sql`${`{${ids.join(",")}}`}::uuid[]`;
}

/** Active → stranded for the given workspaces (those still active). */
export async function strandWorkspaces(db: Executor, workspaceIds: readonly string[], reason: string, at: Date, inactiveBefore?: Date): Promise<LifecycleRow[]> {
  if (workspaceIds.length === 0) return [];
  const r = await sql<LifecycleRow>`
    UPDATE workspaces AS w SET lifecycle = 'stranded', stranded_at = ${at}, lifecycle_reason = ${reason}
    FROM ${lockedInOrder(sql`workspaces w`, sql`w.id = ANY(${uuids(workspaceIds)}) AND w.lifecycle = 'active'`)} AS l
    WHERE w.id = l.id AND w.lifecycle = 'active' ${stillInactive(inactiveBefore)}
    RETURNING ${RETURNING}`.execute(db);
  return r.rows;
}

/**
 * A disconnection decided on activity read a moment earlier holds only if no activity was
 * written since (a Heartbeat through another instance writes at once): checked under the row
 * lock, in the statement that ends the session.
 */
function stillInactive(before: Date | undefined) {
  return before === undefined ? sql`` : sql`AND w.last_active_at < ${before}`;
}

/** Active → destroyed for the given workspaces (those still active). */
export async function destroyWorkspaces(db: Executor, workspaceIds: readonly string[], reason: string, at: Date, inactiveBefore?: Date): Promise<LifecycleRow[]> {
  if (workspaceIds.length === 0) return [];
  const r = await sql<LifecycleRow>`
    UPDATE workspaces AS w SET lifecycle = 'destroyed', lifecycle_reason = ${reason}, ended_at = ${at}
    FROM ${lockedInOrder(sql`workspaces w`, sql`w.id = ANY(${uuids(workspaceIds)}) AND w.lifecycle = 'active'`)} AS l
    WHERE w.id = l.id AND w.lifecycle = 'active' ${stillInactive(inactiveBefore)}
    RETURNING ${RETURNING}`.execute(db);
  return r.rows;
}

/** Active or stranded → abandoned, for one session (by its current session id). */
export async function abandonSession(trx: Transaction<Database>, sessionId: string, reason: string, at: Date): Promise<LifecycleRow[]> {
  const r = await sql<LifecycleRow>`
    UPDATE workspaces AS w SET lifecycle = 'abandoned', lifecycle_reason = ${reason}, ended_at = ${at}
    WHERE w.session_id = ${sessionId}::uuid AND w.lifecycle IN ('active','stranded')
    RETURNING ${RETURNING}`.execute(trx);
  return r.rows;
}

/** Stranded since before `cutoff` → abandoned, at most `limit` rows, skipping rows another transaction holds. */
export async function abandonStrandedBefore(trx: Transaction<Database>, cutoff: Date, limit: number, reason: string, at: Date): Promise<LifecycleRow[]> {
  const r = await sql<LifecycleRow>`
    UPDATE workspaces AS w SET lifecycle = 'abandoned', lifecycle_reason = ${reason}, ended_at = ${at}
    WHERE w.id IN (
      SELECT id FROM workspaces
      WHERE lifecycle = 'stranded' AND stranded_at < ${cutoff}
      ORDER BY stranded_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    AND w.lifecycle = 'stranded'
    RETURNING ${RETURNING}`.execute(trx);
  return r.rows;
}

/**
 * Of these changesets, those no live (active or stranded) session works on any more: an abandon
 * rejects only those. The changesets are locked first and read after, in a statement of its own:
 * of two abandons of a shared changeset's last two sessions, the second to take the lock sees the
 * first's session ended (read committed: a new snapshot per statement), so one of them rejects it.
 */
export async function changesetsWithoutLiveSessions(trx: Transaction<Database>, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  await sql`SELECT id FROM changesets WHERE id = ANY(${uuids(ids)}) ORDER BY id FOR UPDATE`.execute(trx);
  const r = await sql<{ id: string }>`
    SELECT c.id FROM changesets AS c
    WHERE c.id = ANY(${uuids(ids)})
      AND NOT EXISTS (SELECT 1 FROM workspaces AS w WHERE w.changeset_id = c.id AND w.lifecycle IN ('active','stranded'))`.execute(trx);
  return r.rows.map((row) => row.id);
}

export interface RejectedChangeset extends ChangesetRow {
  old_state: ChangesetStateName;
}

/**
 * Rejects the non-terminal changesets among `ids` (abandonment; a forced edge from any
 * non-terminal state). Returns the rejected ones with their previous state.
 */
export async function rejectChangesets(trx: Transaction<Database>, ids: readonly string[], reason: string, at: Date): Promise<RejectedChangeset[]> {
  if (ids.length === 0) return [];
  const r = await sql<RejectedChangeset>`
    UPDATE changesets AS c SET state = 'rejected', reason = ${reason}, updated_at = ${at}, version = c.version + 1
    FROM (SELECT id, state AS old_state FROM changesets
          WHERE id = ANY(${uuids(ids)}) AND state NOT IN ${TERMINAL}
          ORDER BY id FOR UPDATE) AS o
    WHERE c.id = o.id
    RETURNING c.id, c.repo_id, c.state, c.reason, c.created_at, c.updated_at, c.version, o.old_state`.execute(trx);
  return r.rows;
}

export async function changesetStates(db: Executor, ids: readonly string[]): Promise<ChangesetRow[]> {
  if (ids.length === 0) return [];
  const r = await sql<ChangesetRow>`
    SELECT id, repo_id, state, reason, created_at, updated_at, version FROM changesets WHERE id = ANY(${uuids(ids)})`.execute(db);
  return r.rows;
}

/** What the GC reads of a candidate before it acts: the pin (changeset state) and the last activity of any instance. */
export interface GcFacts {
  readonly state: ChangesetStateName;
  /** workspaces.last_active_at, epoch ms: activity flushed by any instance. */
  readonly lastActiveAt: number;
}

/**
 * The GC's candidate lookup, by workspace id: the changeset state (the pin decision) and
 * last_active_at (the liveness decision: activity another instance served). Text and a float8
 * on purpose: a GC slice over 1,000 rows must not spend its event-loop time parsing dates.
 */
export async function gcFactsOfWorkspaces(db: Executor, workspaceIds: readonly string[]): Promise<Map<string, GcFacts>> {
  const out = new Map<string, GcFacts>();
  if (workspaceIds.length === 0) return out;
  const r = await sql<{ workspace_id: string; state: ChangesetStateName; active_ms: number | string }>`
    SELECT w.id AS workspace_id, c.state, (extract(epoch FROM w.last_active_at) * 1000)::float8 AS active_ms
    FROM workspaces w JOIN changesets c ON c.id = w.changeset_id
    WHERE w.id = ANY(${uuids(workspaceIds)})`.execute(db);
  for (const row of r.rows) out.set(row.workspace_id, { state: row.state, lastActiveAt: Math.floor(Number(row.active_ms)) });
  return out;
}

/**
 * The compare-and-set of ResumeSession: moves a stranded workspace of `agentId` whose changeset
 * is not terminal from `dead` to `fresh`. Of racing resumers the first takes the row lock and
 * wins; the others re-check the WHERE against the committed row (session_id moved) and match nothing.
 */
export async function resumeCas(
  trx: Transaction<Database>,
  dead: string,
  fresh: string,
  agentId: string,
  instanceId: string | null,
  at: Date,
): Promise<{ id: string; changeset_id: string } | undefined> {
  const r = await sql<{ id: string; changeset_id: string }>`
    UPDATE workspaces AS w
    SET session_id = ${fresh}::uuid, lifecycle = 'active', stranded_at = NULL, lifecycle_reason = '',
        resumed_from = ${dead}::uuid, last_active_at = ${at}, owner_instance = ${instanceId}::uuid
    WHERE w.session_id = ${dead}::uuid AND w.lifecycle = 'stranded' AND w.agent_id = ${agentId}
      AND EXISTS (SELECT 1 FROM changesets c WHERE c.id = w.changeset_id AND c.state NOT IN ${TERMINAL})
    RETURNING w.id, w.changeset_id`.execute(trx);
  return r.rows[0];
}

export async function lockChangesetShared(trx: Transaction<Database>, id: string): Promise<ChangesetRow | undefined> {
  const r = await sql<ChangesetRow>`
    SELECT id, repo_id, state, reason, created_at, updated_at, version FROM changesets WHERE id = ${id}::uuid FOR SHARE`.execute(trx);
  return r.rows[0];
}

export async function insertRedirect(trx: Transaction<Database>, dead: string, fresh: string, workspaceId: string, at: Date): Promise<void> {
  await trx.insertInto("session_redirects").values({ dead_session_id: dead, new_session_id: fresh, workspace_id: workspaceId, created_at: at }).execute();
}

/**
 * Writes last_active_at of many active workspaces in one statement (never moving it backwards;
 * an ended session's activity means nothing). Two array
 * parameters rather than a VALUES list: compiling a thousand-tuple statement would itself stall the
 * event loop for milliseconds.
 */
export async function flushLastActive(db: Executor, entries: readonly (readonly [string, Date])[]): Promise<number> {
  if (entries.length === 0) return 0;
  const ids = `{${entries.map(([id]) => id).join(",")}}`;
  const times = `{${entries.map(([, t]) => `"${t.toISOString()}"`).join(",")}}`;
  const r = await sql`
    UPDATE workspaces AS w SET last_active_at = l.t
    FROM ${lockedInOrder(sql`workspaces w JOIN unnest(${ids}::uuid[], ${times}::timestamptz[]) AS v(id, t) ON v.id = w.id`, sql`w.last_active_at < v.t AND w.lifecycle = 'active'`, sql`w.id, v.t`)} AS l
    WHERE w.id = l.id AND w.last_active_at < l.t AND w.lifecycle = 'active'`.execute(db);
  return Number(r.numAffectedRows ?? 0n);
}

// ---- instances ----------------------------------------------------------------------------
//
// Instance liveness is judged by the database's clock alone: heartbeats write now(), and an
// instance is stale when heartbeat_at < now() - interval, in SQL. Two instances whose clocks
// disagree (or a test's ManualClock) therefore agree on who is alive.

/** `ms` milliseconds as an SQL interval. */
function millis(ms: number): RawBuilder<unknown> {
  return sql`(${ms}::float8 * interval '1 millisecond')`;
}

export async function registerInstance(db: Executor, id: string, name: string): Promise<void> {
  await sql`INSERT INTO instances (id, name, started_at, heartbeat_at) VALUES (${id}::uuid, ${name}, now(), now())`.execute(db);
}

/** The internal gRPC address other instances forward turn RPCs to (migrations/0008_turns_scale_out.ts). */
export async function setInstanceAddress(db: Executor, id: string, address: string): Promise<void> {
  await sql`UPDATE instances SET advertise_addr = ${address} WHERE id = ${id}::uuid`.execute(db);
}

/**
 * SQL condition: the instance row aliased `alias` is alive — not stopped and heartbeating within
 * `staleAfterMs`, judged with the database's clock (now()), so no instance's clock decides.
 */
export function instanceAlive(alias: string, staleAfterMs: number): RawBuilder<boolean> {
  const i = sql.ref(alias);
  return sql<boolean>`(${i}.stopped_at IS NULL AND ${i}.heartbeat_at >= now() - ${millis(Math.max(0, staleAfterMs))})`;
}

export async function heartbeatInstance(db: Executor, id: string): Promise<void> {
  await sql`UPDATE instances SET heartbeat_at = now() WHERE id = ${id}::uuid AND stopped_at IS NULL`.execute(db);
}

/** The stable name of an instance that has not stopped; undefined when it has (or has no row). */
export async function runningInstanceName(db: Executor, id: string): Promise<string | undefined> {
  const r = await sql<{ name: string }>`SELECT name FROM instances WHERE id = ${id}::uuid AND stopped_at IS NULL`.execute(db);
  return r.rows[0]?.name;
}

export async function stopInstance(db: Executor, id: string): Promise<void> {
  await sql`UPDATE instances SET stopped_at = now() WHERE id = ${id}::uuid`.execute(db);
}

/** Forgets instances silent for longer than `retentionMs` (database time) that own no active workspace (their work was reconciled). */
export async function pruneInstances(db: Executor, retentionMs: number): Promise<void> {
  await sql`
    DELETE FROM instances i WHERE i.heartbeat_at < now() - ${millis(retentionMs)}
      AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.owner_instance = i.id AND w.lifecycle = 'active')`.execute(db);
}

export interface OrphanScope {
  /** This incarnation. */
  readonly instanceId: string;
  /** Startup only: rows of earlier incarnations with this name (this instance's previous lives). */
  readonly previousName: string | undefined;
  /** Startup only: rows with no owner. */
  readonly includeUnowned: boolean;
  /** An instance whose heartbeat_at is older than now() - this (database time), or that stopped, is dead. */
  readonly staleAfterMs: number;
  /**
   * This statement's share of the orphans, when several transactions reconcile at once: the rows
   * whose id's last byte (random in a v4 uuid) is `index` modulo `count`. Shares are disjoint, so
   * concurrent slices never wait for each other's row locks.
   */
  readonly slice?: { readonly index: number; readonly count: number };
}

/** SQL condition on `w`: the active workspace's owner is not a live instance (and is not us). */
function orphaned(scope: OrphanScope): RawBuilder<unknown> {
  const fresh = sql`i.stopped_at IS NULL AND i.heartbeat_at >= now() - ${millis(scope.staleAfterMs)}`;
  const live = scope.previousName === undefined ? fresh : sql`${fresh} AND i.name <> ${scope.previousName}`;
  const owned = sql`w.owner_instance IS NOT NULL AND w.owner_instance <> ${scope.instanceId}::uuid
      AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = w.owner_instance AND ${live})`;
  const whose = scope.includeUnowned ? sql`(w.owner_instance IS NULL OR (${owned}))` : sql`(${owned})`;
  const slice = scope.slice;
  if (slice === undefined || slice.count <= 1) return whose;
  return sql`${whose} AND get_byte(uuid_send(w.id), 15) % ${sql.lit(slice.count)} = ${sql.lit(slice.index)}`;
}

/**
 * Gives the rest of the transaction the sort and hash memory of a set-based reconcile: with the
 * default 4 MB, 100,000 orphans spill their lock-order sort, the events' sort and the join to
 * temporary files (EXPLAIN: external merge, 2 batches). Scoped to the transaction.
 */
export async function roomForSetStatements(trx: Transaction<Database>): Promise<void> {
  await sql`SET LOCAL work_mem = '64MB'`.execute(trx);
}

/** The event each row changed by a set-based UPDATE gets: the same kind, time, reason and payload for all. */
export interface SetEvent {
  readonly kind: string;
  readonly at: Date;
  readonly reason: string;
  readonly payload: Uint8Array;
}

/**
 * Runs `update` (an UPDATE … RETURNING the LifecycleRow columns) and stores one event per
 * changed row in the same statement: no row travels to Node and back, so 100,000 rows take one
 * round trip. Returns the ids of the changed workspaces.
 */
async function updateWithEvents(trx: Transaction<Database>, update: RawBuilder<unknown>, ev: SetEvent): Promise<string[]> {
  const r = await sql<{ id: string }>`
    WITH changed AS (${update}),
    stored AS (${insertEventsFrom(sql`
      SELECT gen_random_uuid(), ${ev.kind}, repo_id, session_id, id, agent_id, changeset_id, ${ev.at}, ${ev.reason}, ${ev.payload}
      FROM changed ORDER BY id`)})
    SELECT id FROM changed`.execute(trx);
  return r.rows.map((row) => row.id);
}

/** Strands every orphaned active workspace whose changeset is not terminal, with its session.stranded event. */
export function strandOrphans(trx: Transaction<Database>, scope: OrphanScope, ev: SetEvent): Promise<string[]> {
  return updateWithEvents(trx, sql`
    UPDATE workspaces AS w SET lifecycle = 'stranded', stranded_at = ${ev.at}, lifecycle_reason = ${ev.reason}
    FROM ${lockedInOrder(sql`workspaces w JOIN changesets c ON c.id = w.changeset_id`, sql`c.state NOT IN ${TERMINAL} AND w.lifecycle = 'active' AND ${orphaned(scope)}`)} AS l
    WHERE w.id = l.id AND w.lifecycle = 'active'
    RETURNING ${RETURNING}`, ev);
}

/** Destroys every orphaned active ephemeral workspace whose changeset is terminal, with its session.destroyed event. */
export function destroyOrphans(trx: Transaction<Database>, scope: OrphanScope, ev: SetEvent): Promise<string[]> {
  return updateWithEvents(trx, sql`
    UPDATE workspaces AS w SET lifecycle = 'destroyed', lifecycle_reason = ${ev.reason}, ended_at = ${ev.at}
    FROM ${lockedInOrder(sql`workspaces w JOIN changesets c ON c.id = w.changeset_id`, sql`c.state IN ${TERMINAL} AND w.mode = 'ephemeral' AND w.lifecycle = 'active' AND ${orphaned(scope)}`)} AS l
    WHERE w.id = l.id AND w.lifecycle = 'active'
    RETURNING ${RETURNING}`, ev);
}

/** Takes over every orphaned active persistent workspace whose changeset is terminal (it lives until expires_at). */
export async function adoptOrphans(trx: Transaction<Database>, scope: OrphanScope): Promise<string[]> {
  const r = await sql<{ id: string }>`
    UPDATE workspaces AS w SET owner_instance = ${scope.instanceId}::uuid
    FROM ${lockedInOrder(sql`workspaces w JOIN changesets c ON c.id = w.changeset_id`, sql`c.state IN ${TERMINAL} AND w.mode = 'persistent' AND w.lifecycle = 'active' AND ${orphaned(scope)}`)} AS l
    WHERE w.id = l.id AND w.lifecycle = 'active'
    RETURNING w.id`.execute(trx);
  return r.rows.map((x) => x.id);
}
