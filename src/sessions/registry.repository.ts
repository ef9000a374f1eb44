/** Every SQL statement of the registry: plain functions taking the database or a transaction first. */
import { sql, type Insertable, type Kysely, type Selectable, type Transaction } from "kysely";
import { insertEventsFrom } from "../platform/outbox.js";
import type { ChangesetStateName, ChangesetTable, Database, EventTable, LifecycleName, RepositoryTable, WorkspaceTable } from "../platform/schema.js";

type Executor = Kysely<Database> | Transaction<Database>;

export type RepositoryRow = Omit<Selectable<RepositoryTable>, "next_agent_number">;
export type RepositoryInsert = Omit<RepositoryRow, "capture_exclude"> & { capture_exclude: string[] };
/** A changeset as the registry caches it; its commit columns are the landing's (src/overlay/landing.ts). */
export type ChangesetRow = Omit<Selectable<ChangesetTable>, "commit_id" | "committed_at">;

/** A workspace row with its changeset's columns, as every read of a workspace needs both. */
export type WorkspaceRow = Omit<Selectable<WorkspaceTable>, "owner_instance"> & {
  cs_state: ChangesetStateName;
  cs_reason: string;
  cs_created_at: Date;
  cs_updated_at: Date;
};

export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === "23505";
}

export async function insertRepository(db: Executor, row: RepositoryInsert): Promise<void> {
  await db.insertInto("repositories").values(row).execute();
}

export function listRepositories(db: Executor): Promise<RepositoryRow[]> {
  return db.selectFrom("repositories").select(["id", "name", "source_path", "created_at", "capture_exclude"]).orderBy("name").execute();
}

export function findRepository(db: Executor, id: string): Promise<RepositoryRow | undefined> {
  return db.selectFrom("repositories").select(["id", "name", "source_path", "created_at", "capture_exclude"]).where("id", "=", id).executeTakeFirst();
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

export async function insertChangeset(db: Executor, row: ChangesetRow): Promise<void> {
  await db.insertInto("changesets").values(row).execute();
}

export function findChangeset(db: Executor, id: string, lock: "share" | "none" = "none"): Promise<ChangesetRow | undefined> {
  let q = db.selectFrom("changesets").select(["id", "repo_id", "state", "reason", "created_at", "updated_at"]).where("id", "=", id);
  if (lock === "share") q = q.forShare();
  return q.executeTakeFirst();
}

/** Compare-and-set: moves the changeset only if it is still in one of `from`. */
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
    .set({ state: to, reason, updated_at: at })
    .where("id", "=", id)
    .where("state", "in", from)
    .returning(["id", "repo_id", "state", "reason", "created_at", "updated_at"])
    .executeTakeFirst();
}

/** Every column a new workspace row is given (lifecycle and the rest take their defaults). */
export type NewWorkspaceRow = Omit<Selectable<WorkspaceTable>, "lifecycle" | "lifecycle_reason" | "stranded_at" | "ended_at" | "resumed_from" | "overlay_version">;

/**
 * The common CreateWorkspace — a new DRAFT changeset and the next agent-N — as ONE statement in
 * autocommit: the counter bump, the changeset, the workspace and its session.created event. The
 * repository row lock that keeps names gap-free is then held for a single round trip, and any
 * failure (a taken session id) rolls the counter back with the rest.
 *
 * The event's payload needs the name the counter yields, so it is completed in SQL: the prepared payload is the
 * encoded Event with the SessionCreated fields other than agent_name, and a second occurrence of
 * field 20 (session_created) carrying only agent_name is appended. Protobuf parsers merge repeated
 * occurrences of a message field, so the stored bytes decode to the whole SessionCreated; the
 * relay and the hub re-encode events before they leave Berth.
 */
export async function createAutoNamedWorkspace(
  db: Executor,
  row: NewWorkspaceRow,
  changeset: ChangesetRow,
  event: Insertable<EventTable>,
): Promise<string | undefined> {
  const r = await sql<{ name: string }>`
    WITH n AS (
      UPDATE repositories SET next_agent_number = next_agent_number + 1 WHERE id = ${row.repo_id}::uuid
      RETURNING 'agent-' || next_agent_number AS name
    ), cs AS (
      INSERT INTO changesets (id, repo_id, state, reason, created_at, updated_at)
      SELECT ${changeset.id}::uuid, ${changeset.repo_id}::uuid, ${changeset.state}, ${changeset.reason}, ${changeset.created_at}, ${changeset.updated_at} FROM n
    ), ws AS (
      INSERT INTO workspaces (id, session_id, repo_id, agent_id, agent_name, changeset_id, intent, base_commit, mode, expires_at, created_at, last_active_at, owner_instance)
      SELECT ${row.id}::uuid, ${row.session_id}::uuid, ${row.repo_id}::uuid, ${row.agent_id}, n.name, ${row.changeset_id}::uuid, ${row.intent},
             ${row.base_commit}, ${row.mode}, ${row.expires_at}::timestamptz, ${row.created_at}, ${row.last_active_at}, ${row.owner_instance}::uuid
      FROM n
    ), ev AS (${insertEventsFrom(sql`
      SELECT ${event.id}::uuid, ${event.kind}, ${event.repo_id}::uuid, ${event.session_id}::uuid, ${event.workspace_id}::uuid, ${event.agent_id},
             ${event.changeset_id}::uuid, ${event.occurred_at}::timestamptz, ${event.reason ?? ""},
             ${event.payload}::bytea || '\\xa201'::bytea || set_byte('\\x00'::bytea, 0, 2 + octet_length(n.name))
               || '\\x0a'::bytea || set_byte('\\x00'::bytea, 0, octet_length(n.name)) || convert_to(n.name, 'UTF8')
      FROM n`)})
    SELECT name FROM n`.execute(db);
  return r.rows[0]?.name;
}

export async function insertWorkspace(trx: Transaction<Database>, row: NewWorkspaceRow): Promise<void> {
  await trx.insertInto("workspaces").values(row).execute();
}

function selectWorkspaces(db: Executor) {
  return db
    .selectFrom("workspaces as w")
    .innerJoin("changesets as c", "c.id", "w.changeset_id")
    .selectAll("w")
    .select(["c.state as cs_state", "c.reason as cs_reason", "c.created_at as cs_created_at", "c.updated_at as cs_updated_at"]);
}

export function findWorkspaceBySession(db: Executor, sessionId: string): Promise<WorkspaceRow | undefined> {
  return selectWorkspaces(db).where("w.session_id", "=", sessionId).executeTakeFirst();
}

/** The rows of these sessions (those that have one), by session id: one statement for many point reads. */
export async function findWorkspacesBySessions(db: Executor, sessionIds: readonly string[]): Promise<Map<string, WorkspaceRow>> {
  const rows = await selectWorkspaces(db)
    .where(sql<boolean>`w.session_id = any(${sessionIds}::uuid[])`)
    .execute();
  return new Map(rows.map((r) => [r.session_id, r]));
}

export function findWorkspaceById(db: Executor, workspaceId: string): Promise<WorkspaceRow | undefined> {
  return selectWorkspaces(db).where("w.id", "=", workspaceId).executeTakeFirst();
}

export function listWorkspacesByLifecycle(db: Executor, lifecycles: readonly LifecycleName[], repoId?: string): Promise<WorkspaceRow[]> {
  let q = selectWorkspaces(db).where("w.lifecycle", "in", lifecycles);
  if (repoId !== undefined) q = q.where("w.repo_id", "=", repoId);
  return q.orderBy("w.created_at").orderBy("w.id").execute();
}

/** The workspaces of a changeset that still hold an overlay (active and stranded), oldest first. */
export function workspacesOfChangeset(db: Executor, changesetId: string): Promise<WorkspaceRow[]> {
  return selectWorkspaces(db).where("w.changeset_id", "=", changesetId).where("w.lifecycle", "in", ["active", "stranded"]).orderBy("w.created_at").orderBy("w.id").execute();
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
