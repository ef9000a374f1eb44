/** Every SQL statement of the registry: plain functions taking the database or a transaction first. */
import { CompiledQuery, sql, type Insertable, type Kysely, type RawBuilder, type Selectable, type Transaction } from "kysely";
import { numberedEvents } from "../platform/outbox.js";
import { toSeq, type ChangesetStateName, type ChangesetTable, type Database, type EventTable, type LifecycleName, type RepositoryTable, type WorkspaceTable } from "../platform/schema.js";

type Executor = Kysely<Database> | Transaction<Database>;

export type RepositoryRow = Omit<Selectable<RepositoryTable>, "next_agent_number" | "request_id">;
export type RepositoryInsert = Omit<RepositoryRow, "capture_exclude" | "remote_url" | "independent_review" | "check_argv" | "check_timeout_seconds"> & {
  capture_exclude: string[];
  request_id: string | null;
  remote_url: string | null;
  independent_review: boolean;
};

/** The columns of a repository every read returns (RepositoryRow). */
const REPOSITORY_ROW = ["id", "name", "source_path", "remote_url", "created_at", "capture_exclude", "independent_review", "check_argv", "check_timeout_seconds"] as const;
/** A changeset as the registry caches it; its commit columns are the landing's (src/overlay/landing.ts). */
export type ChangesetRow = Omit<Selectable<ChangesetTable>, "commit_id" | "committed_at" | "merged_into">;

/** A workspace row with its changeset's columns, as every read of a workspace needs both. */
export type WorkspaceRow = Omit<Selectable<WorkspaceTable>, "owner_instance"> & {
  cs_state: ChangesetStateName;
  cs_reason: string;
  cs_created_at: Date;
  cs_updated_at: Date;
  cs_version: ChangesetRow["version"];
};

export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === "23505";
}

export function isForeignKeyViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === "23503";
}

export async function insertRepository(db: Executor, row: RepositoryInsert): Promise<void> {
  await db.insertInto("repositories").values(row).execute();
}

export function listRepositories(db: Executor): Promise<RepositoryRow[]> {
  return db.selectFrom("repositories").select(REPOSITORY_ROW).orderBy("name").execute();
}

/** A page of repositories by name, after `afterName` (keyset: names are unique). */
export function listRepositoriesAfter(db: Executor, afterName: string | undefined, limit: number): Promise<RepositoryRow[]> {
  let q = db.selectFrom("repositories").select(REPOSITORY_ROW);
  if (afterName !== undefined) q = q.where("name", ">", afterName);
  return q.orderBy("name").limit(limit).execute();
}

export function findRepository(db: Executor, id: string): Promise<RepositoryRow | undefined> {
  return db.selectFrom("repositories").select(REPOSITORY_ROW).where("id", "=", id).executeTakeFirst();
}

/** The repository of a name with the request id that registered it (RegisterRepository's retry). */
export function findRepositoryByName(db: Executor, name: string): Promise<(RepositoryRow & { request_id: string | null }) | undefined> {
  return db.selectFrom("repositories").select([...REPOSITORY_ROW, "request_id"]).where("name", "=", name).executeTakeFirst();
}

/** Changes a repository's settings; undefined when it does not exist. */
export function updateRepositorySettings(db: Executor, id: string, set: { independent_review?: boolean }): Promise<RepositoryRow | undefined> {
  if (set.independent_review === undefined) return findRepository(db, id);
  return db.updateTable("repositories").set({ independent_review: set.independent_review }).where("id", "=", id).returning(REPOSITORY_ROW).executeTakeFirst();
}

/** The independent_review policy of a changeset's repository, as PostgreSQL has it now (undefined: no such changeset). */
export async function independentReviewOfChangeset(db: Executor, changesetId: string): Promise<boolean | undefined> {
  const row = await db
    .selectFrom("changesets")
    .innerJoin("repositories", "repositories.id", "changesets.repo_id")
    .select("repositories.independent_review")
    .where("changesets.id", "=", changesetId)
    .executeTakeFirst();
  return row?.independent_review;
}

/** Sets (or, with null, clears) the repository's check; the row as it is now, undefined when there is no such repository. */
export function setRepositoryCheck(db: Executor, id: string, check: { argv: string[]; timeoutSeconds: number } | null): Promise<RepositoryRow | undefined> {
  return db
    .updateTable("repositories")
    .set({ check_argv: check?.argv ?? null, check_timeout_seconds: check?.timeoutSeconds ?? null })
    .where("id", "=", id)
    .returning(REPOSITORY_ROW)
    .executeTakeFirst();
}

/** Bumps the repository's agent counter under its row lock; undefined when the repository does not exist. */
export async function takeAgentNumber(trx: Transaction<Database>, repoId: string): Promise<number | undefined> {
  const row = await trx
    .updateTable("repositories")
    .set((eb) => ({ next_agent_number: eb("next_agent_number", "+", 1) }))
    .where("id", "=", repoId)
    .returning("next_agent_number")
    .executeTakeFirst();
  return row?.next_agent_number;
}

/** The columns of a changeset the registry caches (ChangesetRow). */
const CHANGESET_ROW = ["id", "repo_id", "state", "reason", "created_at", "updated_at", "version"] as const;

export function findChangeset(db: Executor, id: string, lock: "share" | "none" = "none"): Promise<ChangesetRow | undefined> {
  let q = db.selectFrom("changesets").select(CHANGESET_ROW).where("id", "=", id);
  if (lock === "share") q = q.forShare();
  return q.executeTakeFirst();
}

/** The rows of these changesets (those that exist), by id: one statement for many. */
export async function findChangesets(db: Executor, ids: readonly string[]): Promise<Map<string, ChangesetRow>> {
  const rows = await db.selectFrom("changesets").select(CHANGESET_ROW).where(sql<boolean>`id = any(${ids}::uuid[])`).execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** Compare-and-set: moves the changeset only if it is still in one of `from` (and bumps its version). */
export function casChangesetState(
  db: Executor,
  id: string,
  from: readonly ChangesetStateName[],
  to: ChangesetStateName,
  reason: string,
  at: Date,
): Promise<ChangesetRow | undefined> {
  return db
    .updateTable("changesets")
    .set((eb) => ({ state: to, reason, updated_at: at, version: eb("version", "+", 1) }))
    .where("id", "=", id)
    .where("state", "in", from)
    .returning(CHANGESET_ROW)
    .executeTakeFirst();
}

/** Every column a new workspace row is given (lifecycle and the rest take their defaults). */
export type NewWorkspaceRow = Omit<Selectable<WorkspaceTable>, "lifecycle" | "lifecycle_reason" | "stranded_at" | "ended_at" | "resumed_from" | "overlay_version" | "overlay_files_count" | "overlay_bytes">;

/**
 * Takes `count` agent numbers of each repository for a batch of creates, in a statement of its
 * own: the repository rows are locked in id order (no deadlock between batches of several
 * repositories, on any instance; `FOR NO KEY UPDATE`, which other writers' foreign-key checks do
 * not wait for) and only for this statement, not through the batch's inserts. Its commit is not
 * waited for (synchronous_commit off): the inserts that use the numbers commit afterwards with a
 * WAL flush that makes this commit durable too, so no durable workspace can carry a number the
 * counter could hand out again after a crash. Answers, per repository, the number before the
 * first one taken; undefined, taking nothing, when one of the repositories does not exist.
 */
export async function takeAgentNumbers(db: Executor, counts: ReadonlyMap<string, number>): Promise<Map<string, number> | undefined> {
  const wanted = JSON.stringify([...counts].map(([repo_id, k]) => ({ repo_id, k })));
  const r = await sql<{ id: string; before: number }>`
    WITH k AS (
      SELECT * FROM json_to_recordset(${wanted}::json) AS k(repo_id uuid, k int)
    ), locked AS (
      SELECT r.id FROM repositories r JOIN k ON k.repo_id = r.id ORDER BY r.id FOR NO KEY UPDATE OF r
    ), async AS (
      SELECT set_config('synchronous_commit', 'off', true) AS v
    )
    UPDATE repositories r SET next_agent_number = r.next_agent_number + k.k
    FROM k, locked, async
    WHERE r.id = k.repo_id AND locked.id = r.id AND (SELECT count(*) FROM locked) = (SELECT count(*) FROM k) AND async.v = 'off'
    RETURNING r.id, r.next_agent_number - k.k AS before`.execute(db);
  if (r.rows.length !== counts.size) return undefined;
  return new Map(r.rows.map((x) => [x.id, x.before]));
}

/** One workspace of a batch of creates with new DRAFT changesets: its row (agent name set) and its prepared session.created event. */
export interface DraftCreate {
  readonly row: NewWorkspaceRow;
  readonly event: Insertable<EventTable>;
}

/**
 * Inserts a batch of common creates in one statement, their session.created events numbered by
 * the statement itself in the batch's order (outbox.numberedEvents: no second write of the rows).
 * Returns the highest number it took (undefined: left to the sequencer, when `number` is false or
 * behind another writer's rows).
 */
export async function insertDraftWorkspaces(db: Executor, creates: readonly DraftCreate[], notify: boolean, number: boolean): Promise<bigint | undefined> {
  const batch = JSON.stringify(creates.map(({ row, event }, ord) => ({
    ...row,
    ord,
    e_id: event.id,
    e_kind: event.kind,
    e_occurred_at: event.occurred_at,
    e_reason: event.reason ?? "",
    e_payload: Buffer.from(event.payload).toString("base64"),
  })));
  // The events read the workspaces' RETURNING, which reads the changesets': both are inserted
  // before the statement takes its numbers.
  const r = await sql<{ head: unknown }>`
    WITH d AS (
      SELECT * FROM json_to_recordset(${batch}::json) AS d(
        id uuid, session_id uuid, repo_id uuid, agent_id text, agent_name text, changeset_id uuid, intent text, base_commit text, mode text,
        expires_at timestamptz, created_at timestamptz, last_active_at timestamptz, owner_instance uuid, create_request_id text,
        ord integer, e_id uuid, e_kind text, e_occurred_at timestamptz, e_reason text, e_payload text)
    ), cs AS (
      INSERT INTO changesets (id, repo_id, state, reason, created_at, updated_at)
      SELECT changeset_id, repo_id, 'draft', '', created_at, created_at FROM d
      RETURNING id
    ), ws AS (
      INSERT INTO workspaces (id, session_id, repo_id, agent_id, agent_name, changeset_id, intent, base_commit, mode, expires_at, created_at, last_active_at, owner_instance, create_request_id)
      SELECT d.id, session_id, repo_id, agent_id, agent_name, changeset_id, intent, base_commit, mode, expires_at, created_at, last_active_at, owner_instance, create_request_id
      FROM d JOIN cs ON cs.id = d.changeset_id
      RETURNING id
    ), ${numberedEvents(sql`
      SELECT d.ord, d.e_id, d.e_kind, d.repo_id, d.session_id, d.id, d.agent_id, d.changeset_id, d.e_occurred_at, d.e_reason, decode(d.e_payload, 'base64')
      FROM d JOIN ws ON ws.id = d.id`, notify, number)}
    SELECT head FROM numbering_result`.execute(db);
  const head = r.rows[0]?.head;
  return head == null ? undefined : toSeq(head as string | number | bigint);
}

export async function insertWorkspace(trx: Transaction<Database>, row: NewWorkspaceRow): Promise<void> {
  await trx.insertInto("workspaces").values(row).execute();
}

function selectWorkspaces(db: Executor) {
  return db
    .selectFrom("workspaces as w")
    .innerJoin("changesets as c", "c.id", "w.changeset_id")
    .selectAll("w")
    .select(["c.state as cs_state", "c.reason as cs_reason", "c.created_at as cs_created_at", "c.updated_at as cs_updated_at", "c.version as cs_version"]);
}

export function findWorkspaceBySession(db: Executor, sessionId: string): Promise<WorkspaceRow | undefined> {
  return selectWorkspaces(db).where("w.session_id", "=", sessionId).executeTakeFirst();
}

/** The workspace an agent's CreateWorkspace with this `request_id` made in the repository, if any. */
export function findWorkspaceByCreateRequest(db: Executor, repoId: string, agentId: string, requestId: string): Promise<WorkspaceRow | undefined> {
  return selectWorkspaces(db).where("w.repo_id", "=", repoId).where("w.agent_id", "=", agentId).where("w.create_request_id", "=", requestId).executeTakeFirst();
}

/** The rows of these sessions (those that have one), by session id: one statement for many point reads. */
export async function findWorkspacesBySessions(db: Executor, sessionIds: readonly string[]): Promise<Map<string, WorkspaceRow>> {
  const rows = await selectWorkspaces(db)
    .where(sql<boolean>`w.session_id = any(${sessionIds}::uuid[])`)
    .execute();
  return new Map(rows.map((r) => [r.session_id, r]));
}

/**
 * What a call needs of the row of a session this instance holds live to know the live object is
 * still current (registry.ts, getWorkspace): which workspace holds the session, its lifecycle,
 * the base a RebaseWorkspace moves, and its changeset's state. Nothing else of a live row moves
 * under it, so the check reads only these, with no timestamp to parse (the changeset's
 * updated_at as epoch ms, truncated as pg's and PGlite's Date parsing truncate it; its version
 * as a float8, exact far beyond any count of transitions).
 */
export interface LiveCheckRow {
  readonly session_id: string;
  readonly id: string;
  readonly lifecycle: LifecycleName;
  readonly base_commit: string;
  readonly changeset_id: string;
  readonly cs_state: ChangesetStateName;
  readonly cs_reason: string;
  readonly cs_updated_ms: number;
  readonly cs_version: number;
}

/** Compiled once: the check runs for nearly every RPC, and its text never changes (a batch is one array parameter). */
const LIVE_CHECK_SQL = `SELECT w.session_id, w.id, w.lifecycle, w.base_commit, w.changeset_id, c.state AS cs_state, c.reason AS cs_reason,
  floor(extract(epoch FROM c.updated_at) * 1000)::float8 AS cs_updated_ms, c.version::float8 AS cs_version
  FROM workspaces w JOIN changesets c ON c.id = w.changeset_id WHERE w.session_id = any($1::uuid[])`;

/** The live checks of these sessions (those that have a row), by session id: one statement for many. */
export async function checkLiveSessions(db: Executor, sessionIds: readonly string[]): Promise<Map<string, LiveCheckRow>> {
  const { rows } = await db.executeQuery<LiveCheckRow>(CompiledQuery.raw(LIVE_CHECK_SQL, [sessionIds]));
  return new Map(rows.map((r) => [r.session_id, r]));
}

/** The live check of a full row (a call that read the whole row checks its live object the same way). */
export function liveCheckOf(row: WorkspaceRow): LiveCheckRow {
  return {
    session_id: row.session_id,
    id: row.id,
    lifecycle: row.lifecycle,
    base_commit: row.base_commit,
    changeset_id: row.changeset_id,
    cs_state: row.cs_state,
    cs_reason: row.cs_reason,
    cs_updated_ms: row.cs_updated_at.getTime(),
    cs_version: Number(toSeq(row.cs_version)),
  };
}

/**
 * What a check of a session held live here relied on (api/session-access.ts ownedLiveSession):
 * the live object's values of the columns the narrow live check reads (LiveCheckRow), taken when
 * its lifecycle was checked. A write that skips the row read carries them instead, and writes only
 * while the row still holds them (sessionRowHolds).
 */
export interface SessionFacts {
  readonly workspaceId: string;
  readonly sessionId: string;
  readonly lifecycle: LifecycleName;
  readonly baseCommit: string;
  readonly changesetId: string;
  readonly changesetState: ChangesetStateName;
}

/**
 * A query of the workspace row of `f` while it holds those facts — the session is still held by
 * that workspace, in the same lifecycle, on the same base, with its changeset in the same state
 * (what confirmLive reads and what the live object then carries) — locked FOR SHARE: a concurrent
 * strand, resume or end of the session (which updates the row) either commits first, and the row
 * is not found, or waits for the statement's commit and follows it. One row or none. SQL only
 * compares the values the check used; the rules that judged them stay in JavaScript (assertActive).
 */
export function sessionRowHolds(f: SessionFacts): RawBuilder<{ id: string }> {
  return sql<{ id: string }>`SELECT w.id FROM workspaces w JOIN changesets c ON c.id = w.changeset_id
    WHERE w.id = ${f.workspaceId}::uuid AND w.session_id = ${f.sessionId}::uuid AND w.lifecycle = ${f.lifecycle}
      AND w.base_commit = ${f.baseCommit} AND w.changeset_id = ${f.changesetId}::uuid AND c.state = ${f.changesetState}
    FOR SHARE OF w`;
}

export function findWorkspaceById(db: Executor, workspaceId: string): Promise<WorkspaceRow | undefined> {
  return selectWorkspaces(db).where("w.id", "=", workspaceId).executeTakeFirst();
}

export function listWorkspacesByLifecycle(db: Executor, lifecycles: readonly LifecycleName[], repoId?: string): Promise<WorkspaceRow[]> {
  let q = selectWorkspaces(db).where("w.lifecycle", "in", lifecycles);
  if (repoId !== undefined) q = q.where("w.repo_id", "=", repoId);
  return q.orderBy("w.created_at").orderBy("w.id").execute();
}

/**
 * A page of a repository's workspaces in these lifecycles, oldest first, after the key (created_at,
 * id) of the last one of the previous page. Keyset on columns a workspace never changes, so a page
 * neither skips nor repeats a row when others are created, stranded or resumed meanwhile.
 */
export function listWorkspacesPage(db: Executor, repoId: string, lifecycles: readonly LifecycleName[], after: { readonly createdAt: Date; readonly id: string } | undefined, limit: number): Promise<WorkspaceRow[]> {
  let q = selectWorkspaces(db).where("w.repo_id", "=", repoId).where("w.lifecycle", "in", lifecycles);
  if (after !== undefined) q = q.where(sql<boolean>`(w.created_at, w.id) > (${after.createdAt}, ${after.id}::uuid)`);
  return q.orderBy("w.created_at").orderBy("w.id").limit(limit).execute();
}

/** The workspaces of a changeset that still hold an overlay (active and stranded), oldest first. */
export function workspacesOfChangeset(db: Executor, changesetId: string): Promise<WorkspaceRow[]> {
  return selectWorkspaces(db).where("w.changeset_id", "=", changesetId).where("w.lifecycle", "in", ["active", "stranded"]).orderBy("w.created_at").orderBy("w.id").execute();
}

/** Every workspace that works or worked on a changeset, in any lifecycle, oldest first (its review lists them). */
export function allWorkspacesOfChangeset(db: Executor, changesetId: string): Promise<WorkspaceRow[]> {
  return selectWorkspaces(db).where("w.changeset_id", "=", changesetId).orderBy("w.created_at").orderBy("w.id").execute();
}

export function listActiveWorkspacesOfInstance(db: Executor, instanceId: string): Promise<WorkspaceRow[]> {
  return selectWorkspaces(db)
    .where("w.lifecycle", "=", "active")
    .where(sql<boolean>`w.owner_instance = ${instanceId}::uuid`)
    .orderBy("w.created_at")
    .orderBy("w.id")
    .execute();
}

/**
 * A Heartbeat served by an instance that does not hold the session: its last_active_at, now,
 * never moved backwards; false when the session is no longer active.
 */
export async function renewActivity(db: Executor, workspaceId: string, at: Date): Promise<boolean> {
  const r = await sql`UPDATE workspaces SET last_active_at = greatest(last_active_at, ${at})
    WHERE id = ${workspaceId}::uuid AND lifecycle = 'active'`.execute(db);
  return Number(r.numAffectedRows ?? 0n) > 0;
}

export async function agentsOfChangeset(db: Executor, changesetId: string): Promise<string[]> {
  const rows = await db.selectFrom("workspaces").select("agent_id").distinct().where("changeset_id", "=", changesetId).execute();
  return rows.map((r) => r.agent_id);
}

/** Active workspaces of `repoId` and in all; `within`: the total counts only these repositories. */
export async function countActive(db: Executor, repoId: string | undefined, within?: readonly string[]): Promise<{ active: number; total: number }> {
  if (within !== undefined && within.length === 0) {
    return { active: 0, total: 0 };
  }
  let q = db
    .selectFrom("workspaces")
    .select([
      sql<string>`count(*)`.as("total"),
      sql<string>`count(*) FILTER (WHERE repo_id = ${repoId ?? null}::uuid)`.as("active"),
    ])
    .where("lifecycle", "=", "active");
  if (within !== undefined) q = q.where("repo_id", "in", within);
  const row = await q.executeTakeFirstOrThrow();
  return { active: Number(row.active), total: Number(row.total) };
}

export function findRedirect(db: Executor, deadSessionId: string): Promise<{ new_session_id: string; workspace_id: string } | undefined> {
  return db
    .selectFrom("session_redirects")
    .select(["new_session_id", "workspace_id"])
    .where("dead_session_id", "=", deadSessionId)
    .executeTakeFirst();
}
