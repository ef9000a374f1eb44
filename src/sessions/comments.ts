/**
 * Review comments (issue 29): what a reviewer says about a changeset, one of its paths or a line,
 * kept until someone resolves it and never deleted, so a comment cannot be dropped without a
 * trace. Each change is one transaction of the unit of work with its event (comment.added,
 * comment.resolved), so every instance and every watcher learns of it from the outbox. Who may
 * comment is the API's to decide (api/comment-handlers.ts); this layer stores.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../platform/clock.js";
import { notFound } from "../platform/errors.js";
import type { EventInput } from "../platform/outbox.js";
import type { UnitOfWork } from "../platform/unit-of-work.js";
import * as commentsRepo from "./comments.repository.js";
import * as sqlRepo from "./registry.repository.js";
import { changesetNotFound } from "./changesets.js";

export interface Comment {
  readonly id: string;
  readonly changesetId: string;
  readonly repoId: string;
  readonly path: string;
  readonly line: number;
  readonly body: string;
  readonly author: string;
  readonly createdAt: number;
  readonly resolvedBy: string | undefined;
  readonly resolvedAt: number | undefined;
}

/** The position of a comment in its changeset's list (a page token's key). */
export type CommentKey = readonly [createdAt: number, id: string];

export function commentKey(c: Comment): CommentKey {
  return [c.createdAt, c.id];
}

export interface NewCommentInput {
  readonly changesetId: string;
  readonly path: string;
  readonly line: number;
  readonly body: string;
  readonly author: string;
}

export class Comments {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly newId: () => string = randomUUID,
  ) {}

  /** Stores a comment and its comment.added event; CHANGESET_NOT_FOUND when there is no such changeset. */
  async add(input: NewCommentInput): Promise<Comment> {
    const now = this.clock.now();
    const row = await this.uow.run(async (change) => {
      const cs = await sqlRepo.findChangeset(change.trx, input.changesetId);
      if (!cs) throw changesetNotFound(input.changesetId);
      // Milliseconds, as the clock gives them: the page key (created_at, id) then round-trips exactly.
      const row = await commentsRepo.insertComment(change.trx, { ...input, id: this.newId(), repoId: cs.repo_id, createdAt: new Date(now) });
      change.record(commentEvent("comment.added", row, input.author, now));
      return row;
    });
    return commentFromRow(row);
  }

  /** A comment, or COMMENT_NOT_FOUND. */
  async get(commentId: string): Promise<Comment> {
    const row = await commentsRepo.findComment(this.uow.db, commentId);
    if (!row) throw commentNotFound(commentId);
    return commentFromRow(row);
  }

  /**
   * Resolves a comment (comment.resolved). Idempotent: a comment already resolved is answered as
   * it is, with its first resolver and no second event.
   */
  async resolve(commentId: string, by: string): Promise<Comment> {
    const now = this.clock.now();
    const row = await this.uow.run(async (change) => {
      const resolved = await commentsRepo.resolveOpenComment(change.trx, commentId, by, new Date(now));
      if (resolved) {
        change.record(commentEvent("comment.resolved", resolved, by, now));
        return resolved;
      }
      const existing = await commentsRepo.findComment(change.trx, commentId);
      if (!existing) throw commentNotFound(commentId);
      return existing;
    });
    return commentFromRow(row);
  }

  /** A page of a changeset's comments, oldest first (limit: the page's size + 1); CHANGESET_NOT_FOUND when there is no such changeset. */
  async list(changesetId: string, includeResolved: boolean, after: CommentKey | undefined, limit: number): Promise<Comment[]> {
    if (!(await sqlRepo.findChangeset(this.uow.db, changesetId))) throw changesetNotFound(changesetId);
    const rows = await commentsRepo.listComments(this.uow.db, changesetId, includeResolved, after && { createdAt: new Date(after[0]), id: after[1] }, limit);
    return rows.map(commentFromRow);
  }
}

function commentEvent(kind: "comment.added" | "comment.resolved", row: commentsRepo.CommentRow, agentId: string, at: number): EventInput {
  return {
    kind,
    repoId: row.repo_id,
    changesetId: row.changeset_id,
    agentId,
    occurredAt: at,
    payload: { case: "commentChanged", value: { commentId: row.id, path: row.path, line: row.line } },
  };
}

function commentFromRow(row: commentsRepo.CommentRow): Comment {
  return {
    id: row.id,
    changesetId: row.changeset_id,
    repoId: row.repo_id,
    path: row.path,
    line: row.line,
    body: row.body,
    author: row.author,
    createdAt: row.created_at.getTime(),
    resolvedBy: row.resolved_by ?? undefined,
    resolvedAt: row.resolved_at?.getTime(),
  };
}

function commentNotFound(commentId: string) {
  return notFound("COMMENT_NOT_FOUND", `comment ${commentId} does not exist`, { comment_id: commentId });
}
