/**
 * The SQL of reading changesets for review (ListChangesets, GetChangeset; issue 29): a
 * repository's changesets by state, one changeset's history (changeset_transitions, written by
 * src/sessions/changesets.ts recordMoves), its sessions and its merge target (written by src/overlay/landing.repository.ts).
 */
import { sql, type Insertable, type Kysely, type Selectable, type Transaction } from "kysely";
import type { ChangesetStateName, ChangesetTransitionTable, Database } from "../platform/schema.js";
import type { ChangesetRow } from "./registry.repository.js";

type Executor = Kysely<Database> | Transaction<Database>;

/** A changeset with its landing columns, as a review shows it. */
export type ReviewedChangesetRow = ChangesetRow & { commit_id: string | null; committed_at: Date | null; merged_into: string | null };

const COLUMNS = ["id", "repo_id", "state", "reason", "created_at", "updated_at", "version", "commit_id", "committed_at", "merged_into"] as const;

export function findReviewedChangeset(db: Executor, id: string): Promise<ReviewedChangesetRow | undefined> {
  return db.selectFrom("changesets").select(COLUMNS).where("id", "=", id).executeTakeFirst() as Promise<ReviewedChangesetRow | undefined>;
}

/**
 * A page of a repository's changesets, newest created first, after the one with key `after`
 * (keyset on (created_at, id), which never change: a changeset that moves keeps its place).
 * `states` empty: every state.
 */
export function listChangesetsPage(
  db: Executor,
  repoId: string,
  states: readonly ChangesetStateName[],
  after: { readonly createdAt: Date; readonly id: string } | undefined,
  limit: number,
): Promise<ReviewedChangesetRow[]> {
  let q = db.selectFrom("changesets").select(COLUMNS).where("repo_id", "=", repoId);
  if (states.length > 0) q = q.where("state", "in", states);
  if (after !== undefined) q = q.where(sql<boolean>`(created_at, id) < (${after.createdAt}, ${after.id}::uuid)`);
  return q.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).execute() as Promise<ReviewedChangesetRow[]>;
}

/** A changeset's recorded transitions, oldest first (the database's order: the version each left). */
export function listTransitions(db: Executor, changesetId: string): Promise<Selectable<ChangesetTransitionTable>[]> {
  return db.selectFrom("changeset_transitions").selectAll().where("changeset_id", "=", changesetId).orderBy("version").execute();
}

/** History rows of changeset moves (src/sessions/changesets.ts, recordMoves), in the moves' transaction. */
export async function insertTransitions(trx: Transaction<Database>, rows: readonly Insertable<ChangesetTransitionTable>[]): Promise<void> {
  if (rows.length === 0) return;
  await trx.insertInto("changeset_transitions").values([...rows]).execute();
}
