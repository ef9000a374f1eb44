/** Every SQL statement of review comments (migrations/0023_comments.ts). */
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { CommentTable, Database } from "../platform/schema.js";

type Executor = Kysely<Database> | Transaction<Database>;

export type CommentRow = Selectable<CommentTable>;

export interface NewComment {
  readonly id: string;
  readonly changesetId: string;
  readonly repoId: string;
  readonly path: string;
  readonly line: number;
  readonly body: string;
  readonly author: string;
  readonly createdAt: Date;
}

export function insertComment(db: Executor, c: NewComment): Promise<CommentRow> {
  return db
    .insertInto("comments")
    .values({ id: c.id, changeset_id: c.changesetId, repo_id: c.repoId, path: c.path, line: c.line, body: c.body, author: c.author, created_at: c.createdAt })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findComment(db: Executor, id: string): Promise<CommentRow | undefined> {
  return db.selectFrom("comments").selectAll().where("id", "=", id).executeTakeFirst();
}

/** Resolves an open comment; undefined when it is resolved already (or does not exist): the first resolver stays. */
export function resolveOpenComment(db: Executor, id: string, by: string, at: Date): Promise<CommentRow | undefined> {
  return db.updateTable("comments").set({ resolved_by: by, resolved_at: at }).where("id", "=", id).where("resolved_at", "is", null).returningAll().executeTakeFirst();
}

/** A changeset's comments oldest first, after the key (created_at, id) of the previous page's last. */
export function listComments(db: Executor, changesetId: string, includeResolved: boolean, after: { readonly createdAt: Date; readonly id: string } | undefined, limit: number): Promise<CommentRow[]> {
  let q = db.selectFrom("comments").selectAll().where("changeset_id", "=", changesetId);
  if (!includeResolved) q = q.where("resolved_at", "is", null);
  if (after !== undefined) q = q.where(sql<boolean>`(created_at, id) > (${after.createdAt}, ${after.id}::uuid)`);
  return q.orderBy("created_at").orderBy("id").limit(limit).execute();
}
