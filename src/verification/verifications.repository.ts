/** Every SQL statement of verifications (migrations/0024_verifications.ts): plain functions taking the database or a transaction first. */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { Database, VerificationStateName, VerificationTable } from "../platform/schema.js";
import { instanceAlive } from "../sessions/lifecycle.repository.js";

type Executor = Kysely<Database> | Transaction<Database>;

export type VerificationRow = Selectable<VerificationTable>;

/** The check of the changeset's repository as the database has it now (NULL argv: none). */
export async function checkOfChangeset(db: Executor, changesetId: string): Promise<{ repo_id: string; argv: string[]; timeout_seconds: number | null } | undefined> {
  const row = await db
    .selectFrom("changesets as c")
    .innerJoin("repositories as r", "r.id", "c.repo_id")
    .select(["c.repo_id", "r.check_argv", "r.check_timeout_seconds"])
    .where("c.id", "=", changesetId)
    .executeTakeFirst();
  if (!row || !row.check_argv || row.check_argv.length === 0) return undefined;
  return { repo_id: row.repo_id, argv: row.check_argv, timeout_seconds: row.check_timeout_seconds };
}

export async function insertVerification(db: Executor, row: Pick<VerificationRow, "id" | "changeset_id" | "repo_id" | "argv" | "timeout_seconds" | "started_at" | "instance_id">): Promise<void> {
  await db.insertInto("verifications").values({ ...row, state: "running" }).execute();
}

/**
 * Finishes a RUNNING verification (compare-and-set on its state): the row as finished, or
 * undefined when it was already finished (by the sweep, a newer run, another instance).
 */
export function finishVerification(
  db: Executor,
  id: string,
  end: { state: Exclude<VerificationStateName, "running">; exit_code: number | null; reason: string; output_tail: string; finished_at: Date },
): Promise<VerificationRow | undefined> {
  return db.updateTable("verifications").set(end).where("id", "=", id).where("state", "=", "running").returningAll().executeTakeFirst();
}

/** The RUNNING verifications of a changeset other than `except` (a new run supersedes them). */
export function runningOfChangeset(db: Executor, changesetId: string, except: string): Promise<VerificationRow[]> {
  return db.selectFrom("verifications").selectAll().where("changeset_id", "=", changesetId).where("state", "=", "running").where("id", "!=", except).execute();
}

/** This incarnation's RUNNING verifications of a changeset (the ones it must run). */
export function runningHere(db: Executor, instanceId: string, changesetId?: string): Promise<VerificationRow[]> {
  let q = db.selectFrom("verifications").selectAll().where("instance_id", "=", instanceId).where("state", "=", "running");
  if (changesetId !== undefined) q = q.where("changeset_id", "=", changesetId);
  return q.execute();
}

export async function recordCommit(db: Executor, id: string, commitId: string): Promise<void> {
  await db.updateTable("verifications").set({ commit_id: commitId }).where("id", "=", id).execute();
}

/** A changeset's verifications, oldest first (the last `limit`), with the name of the instance that ran each. */
export async function listOfChangeset(db: Executor, changesetId: string, limit: number): Promise<(VerificationRow & { instance_name: string | null })[]> {
  const rows = await db
    .selectFrom("verifications as v")
    .leftJoin("instances as i", "i.id", "v.instance_id")
    .selectAll("v")
    .select("i.name as instance_name")
    .where("v.changeset_id", "=", changesetId)
    .orderBy("v.started_at", "desc")
    .orderBy("v.id", "desc")
    .limit(limit)
    .execute();
  return rows.reverse();
}

/**
 * RUNNING verifications nobody is running any more: of an earlier incarnation of this instance
 * (same name), of an instance stopped or silent for staleAfterMs (by the database's clock), of no
 * instance row at all. Those of live instances, whichever, are left alone (as turns are:
 * turns/store.ts failOrphanedTurns).
 */
export async function orphaned(db: Executor, me: string, myName: string | undefined, staleAfterMs: number): Promise<VerificationRow[]> {
  const r = await sql<VerificationRow>`
    SELECT v.* FROM verifications v
    WHERE v.state = 'running' AND v.instance_id IS DISTINCT FROM ${me}::uuid
      AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = v.instance_id AND i.name IS DISTINCT FROM ${myName ?? null} AND ${instanceAlive("i", staleAfterMs)})`.execute(db);
  return r.rows;
}
