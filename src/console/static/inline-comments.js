// Review comments beside the diff lines they are about: a thread under each line of the new file
// that has comments, and a form under a line when its new line number is clicked. The comments
// come from the changeset's comment list (comments.js reads them once for both places); a comment
// on a line the diff does not show stays in that list only.
import { el } from "./dom.js";

const key = (path, line) => `${line}\u0000${path}`;

/**
 * `card(comment)` draws one comment (with its Resolve button); `add(request)` adds one (rejects
 * with the server's refusal). Returns the hooks the changeset page gives drawDiff and the list.
 */
export function inlineComments({ card, add, refusalOf }) {
  /** Rows of the diff drawn so far, by path and new line number. */
  let rows = new Map();
  /** The comments by path and line, as last read. */
  let byLine = new Map();
  const threads = new Map();
  /** Forms open, by path and line: they outlive a redraw of the diff (an agent writing while the reviewer types). */
  const forms = new Map();
  let refocus = null;

  const threadFor = (k) => {
    const comments = byLine.get(k);
    if (!comments) return null;
    const t = el("div", { class: "inline-thread", "data-testid": "inline-comments" }, comments.map(card));
    threads.set(k, t);
    return t;
  };

  const openForm = (row, path, line) => {
    const k = key(path, line);
    const open = forms.get(k);
    if (open) {
      // Its line left the diff and came back with this click: put it under the line again.
      if (!open.isConnected) row.after(open);
      return open.querySelector("textarea").focus();
    }
    const body = el("textarea", { rows: 2, cols: 60, placeholder: `comment on ${path}:${line}`, "aria-label": "comment", "data-testid": "inline-comment-body" });
    const out = el("div", { class: "refusal", "data-testid": "inline-comment-refusal", hidden: true });
    const close = () => {
      forms.delete(k);
      form.remove();
    };
    const form = el("div", { class: "inline-form", "data-testid": "inline-comment-form" }, body,
      el("div", {},
        el("button", {
          "data-testid": "inline-comment-add",
          onclick: async (e) => {
            e.target.disabled = true;
            try {
              await add({ path, line, body: body.value });
              close();
            } catch (err) {
              e.target.disabled = false;
              out.hidden = false;
              out.replaceChildren(...refusalOf(err));
            }
          },
        }, "Comment"),
        " ",
        el("button", { class: "link", onclick: close }, "Cancel")),
      out);
    forms.set(k, form);
    row.after(form);
    body.focus();
  };

  return {
    /** drawDiff's hook: marks a new-side line commentable; returns its thread when it has one. */
    decorate(row, line, pathDiff) {
      if (line.new === undefined) return null;
      const k = key(pathDiff.path, line.new);
      rows.set(k, row);
      const ln = row.children[1];
      ln.classList.add("commentable");
      ln.title = `comment on line ${line.new}`;
      ln.dataset.testid = "diff-line-number";
      const thread = threadFor(k);
      const form = forms.get(k);
      if (!form) return thread;
      if (refocus === form) {
        refocus = null;
        // drawDiff places this slice's rows before the next task.
        queueMicrotask(() => form.querySelector("textarea").focus());
      }
      const both = document.createDocumentFragment();
      both.append(...[thread, form].filter(Boolean));
      return both;
    },
    /** The diff's one click listener (not one per line: a 10,000-line diff would hold 10,000). */
    click(e) {
      const ln = e.target.closest?.("[data-testid=diff-line-number]");
      const file = ln?.closest("[data-testid=diff-file]");
      if (!ln || !file) return;
      const row = ln.parentElement;
      const line = Number(row.dataset.new);
      openForm(threads.get(key(file.dataset.path, line)) ?? row, file.dataset.path, line);
    },
    /** The diff is drawn anew: forget its rows, keep the open forms (and which one has focus). */
    reset() {
      rows = new Map();
      threads.clear();
      refocus = [...forms.values()].find((f) => f.contains(document.activeElement)) ?? null;
    },
    /** The comments as now read: each line's thread redrawn in place. */
    set(comments) {
      byLine = new Map();
      for (const c of comments) {
        if (!c.path || !c.line) continue;
        const k = key(c.path, c.line);
        byLine.set(k, [...(byLine.get(k) ?? []), c]);
      }
      for (const [k, t] of threads) {
        t.remove();
        threads.delete(k);
      }
      for (const k of byLine.keys()) {
        const row = rows.get(k);
        if (row) row.after(threadFor(k));
      }
    },
  };
}
