// A changeset's review comments (ListComments, resolved ones included): on the changeset, a path
// or a line of it, each with its author and time and a Resolve button while open; a form adds
// one (AddComment). Re-read on the changeset's comment.* events, so another reviewer's comment or
// the agent's resolution shows without a reload. Nothing here deletes a comment: there is no way to.
// `onComments` gets each list read, for the threads beside the diff's lines (inline-comments.js).
import { el, fill, when } from "./dom.js";
import { refusal } from "./decisions.js";
import { call } from "./rpc.js";

const where = (c) => (c.path ? `${c.path}${c.line ? `:${c.line}` : ""}` : "the changeset");

export function commentsPanel(changesetId, onComments = () => {}) {
  const list = el("div", { "data-testid": "comments" });
  const out = el("div", { class: "refusal", "data-testid": "comment-refusal", hidden: true });
  const path = el("input", { type: "text", placeholder: "path (optional)", "aria-label": "path", "data-testid": "comment-path", size: 30 });
  const line = el("input", { type: "number", min: 0, placeholder: "line", "aria-label": "line", "data-testid": "comment-line", style: "width: 6em" });
  const body = el("textarea", { rows: 2, cols: 60, placeholder: "comment", "aria-label": "comment", "data-testid": "comment-body" });
  const show = (err) => {
    out.hidden = !err;
    fill(out, err ? refusal(err) : null);
  };

  let asked = 0;
  const load = async () => {
    const mine = ++asked;
    try {
      const comments = [];
      let pageToken = "";
      do {
        const r = await call("WorkspaceService", "ListComments", { changesetId, includeResolved: true, pageToken });
        comments.push(...(r.comments ?? []));
        pageToken = r.nextPageToken ?? "";
      } while (pageToken);
      if (mine !== asked) return;
      fill(list, comments.length === 0 ? el("p", { class: "muted" }, "No comments.") : comments.map(commentView));
      onComments(comments);
    } catch (err) {
      if (mine === asked) fill(list, el("p", { class: "muted" }, `Comments unavailable: ${err.reason ?? err.code}.`));
    }
  };

  const commentView = (c) => {
    const resolve = c.resolved
      ? el("span", { class: "muted", "data-testid": "comment-resolved" }, `resolved by ${c.resolvedBy} ${when(c.resolvedAt)}`)
      : el("button", {
          "data-testid": "comment-resolve",
          onclick: async (e) => {
            e.target.disabled = true;
            try {
              await call("WorkspaceService", "ResolveComment", { commentId: c.id });
              show(undefined);
              await load();
            } catch (err) {
              e.target.disabled = false;
              show(err);
            }
          },
        }, "Resolve");
    return el("div", { class: c.resolved ? "comment resolved" : "comment", "data-testid": "comment", "data-path": c.path ?? "", "data-line": c.line ?? 0 },
      el("div", {}, el("span", { class: "mono", "data-testid": "comment-where" }, where(c)), " ", el("b", {}, c.author), " ", el("span", { class: "muted" }, when(c.createdAt)), " ", resolve),
      el("div", { class: "comment-body", "data-testid": "comment-text" }, c.body));
  };

  /** AddComment, then the list re-read; rejects with the refusal. */
  const addComment = async (request) => {
    await call("WorkspaceService", "AddComment", { changesetId, ...request });
    await load();
  };

  const add = el("button", {
    "data-testid": "comment-add",
    onclick: async () => {
      const request = { body: body.value, path: path.value.trim(), line: Number(line.value || 0) };
      add.disabled = true;
      try {
        await addComment(request);
        body.value = "";
        show(undefined);
      } catch (err) {
        show(err);
      } finally {
        add.disabled = false;
      }
    },
  }, "Comment");
  const node = el("div", {}, list, el("div", { class: "comment-form" }, path, " ", line, el("div", {}, body), add, out));
  return { node, load, add: addComment, card: commentView };
}
