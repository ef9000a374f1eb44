/**
 * AddComment, ListComments, ResolveComment (issue 29): review comments that reach the agent. The
 * behaviour lives in src/sessions/comments.ts; these validate, check the caller and translate.
 * Whoever may read a changeset may comment on it and resolve its comments (changeset-access.ts
 * requireChangesetReader, DiffChangeset's rule): the reviewer who wrote a comment and the agent
 * that acted on it both close it.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { CommentSchema } from "../../gen/berth/v1/types_pb.js";
import type { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { commentKey, type Comment, type CommentKey } from "../sessions/comments.js";
import { moverOf, requireChangesetReader } from "./changeset-access.js";
import type { ServiceHandlers } from "./handler.js";
import { pageOf, readPage, type PageRule } from "./pagination.js";
import { Check, LIMITS } from "./validate.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type CommentMethods = Pick<ServiceHandlers<typeof WorkspaceService>, "addComment" | "listComments" | "resolveComment">;

const COMMENTS_PAGE: PageRule = { list: "comments", defaultSize: 100, maxSize: 1000 };
/** The largest line a comment names: the column is a PostgreSQL integer. */
const MAX_LINE = 2_147_483_647;

export function commentToWire(c: Comment): MessageInitShape<typeof CommentSchema> {
  return {
    id: c.id,
    changesetId: c.changesetId,
    path: c.path,
    line: c.line,
    body: c.body,
    author: c.author,
    createdAt: timestampFromMs(c.createdAt),
    resolved: c.resolvedAt !== undefined,
    resolvedBy: c.resolvedBy ?? "",
    ...(c.resolvedAt !== undefined ? { resolvedAt: timestampFromMs(c.resolvedAt) } : {}),
  };
}

export function commentHandlers(deps: WorkspaceServiceDeps): CommentMethods {
  const { registry } = deps;
  return {
    async addComment(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      const body = c.text("body", req.body, { max: LIMITS.commentBody, required: true, allowNewlines: true });
      const path = req.path === "" ? "" : c.path("path", req.path);
      c.range("line", req.line, 0, MAX_LINE);
      if (req.line > 0 && req.path === "") c.add("line", "PATH_REQUIRED", `a line (${req.line}) is a line of a path: set path too`);
      c.done();
      await requireChangesetReader(registry, ctx, changesetId!);
      const comment = await registry.comments.add({ changesetId: changesetId!, path: path!, line: req.line, body: body!, author: moverOf(ctx) });
      return { comment: commentToWire(comment) };
    },

    async listComments(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      const page = readPage(c, COMMENTS_PAGE, req.pageSize, req.pageToken, ["number", "string"]);
      c.done();
      await requireChangesetReader(registry, ctx, changesetId!);
      const rows = await registry.comments.list(changesetId!, req.includeResolved, page.after as CommentKey | undefined, page.size + 1);
      const { items, nextPageToken } = pageOf(COMMENTS_PAGE, page, rows, commentKey);
      return { comments: items.map(commentToWire), nextPageToken };
    },

    async resolveComment(req, ctx) {
      const c = new Check();
      const commentId = c.uuid("comment_id", req.commentId);
      c.done();
      // The comment's changeset decides who may resolve it; an outsider learns nothing of the id
      // beyond what DiffChangeset would tell (NOT_CHANGESET_OWNER before NOT_FOUND for a member).
      const existing = await registry.comments.get(commentId!);
      await requireChangesetReader(registry, ctx, existing.changesetId);
      return { comment: commentToWire(await registry.comments.resolve(commentId!, moverOf(ctx))) };
    },
  };
}
