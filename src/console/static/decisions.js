// The decisions on a changeset: one button per state the server says the caller may move it to
// now (GetChangeset's allowed_transitions: the server's rule, never a copy of it here), each
// calling TransitionChangeset as `berth changeset` does. Refusals are shown with their reason
// and details, beside the buttons.
import { el, enumName, fill } from "./dom.js";
import { call } from "./rpc.js";

const LABELS = {
  CHANGESET_STATE_DRAFT: "Back to draft",
  CHANGESET_STATE_SUBMITTED: "Submit",
  CHANGESET_STATE_VERIFYING: "Verify",
  CHANGESET_STATE_APPROVED: "Approve",
  CHANGESET_STATE_REJECTED: "Reject",
  CHANGESET_STATE_CLOSED: "Close",
};

/** What a refusal says to the person who clicked: its reason, and what its details ask of them. */
export function refusal(err) {
  const lines = [el("div", {}, el("b", {}, `${err.code}${err.reason ? ` ${err.reason}` : ""}`), `: ${err.message}`)];
  if (err.reason === "MERGE_CONFLICT") {
    let paths = [];
    try {
      paths = JSON.parse(err.metadata.paths ?? "[]");
    } catch {
      // Not JSON: the message names them.
    }
    lines.push(el("div", {}, `Conflicting paths with ${err.metadata.target_ref ?? "the target"}:`), el("ul", { "data-testid": "conflict-paths" }, paths.map((p) => el("li", { class: "mono" }, p))));
  } else if (err.reason === "TARGET_MOVED") lines.push(el("div", {}, "The target branch moved while merging; nothing changed. Merge again to retry."));
  return lines;
}

/**
 * The buttons for changeset `cs` given `allowed` (ChangesetState names) and the repository's
 * default branch name when known; `done` runs after a success.
 */
export function decisionButtons(cs, allowed, done) {
  const out = el("div", { class: "refusal", "data-testid": "refusal", hidden: true });
  const reason = el("input", { type: "text", placeholder: "reason (required to reject)", "aria-label": "reason", "data-testid": "decision-reason", size: 40 });
  const act = async (button, request) => {
    button.disabled = true;
    out.hidden = true;
    try {
      const r = await call("WorkspaceService", "TransitionChangeset", { changesetId: cs.id, expectedState: cs.state, ...request });
      reason.value = "";
      done(r);
    } catch (err) {
      fill(out, refusal(err));
      out.hidden = false;
    } finally {
      button.disabled = false;
    }
  };
  const buttons = [];
  for (const to of allowed) {
    if (to === "CHANGESET_STATE_MERGED") continue;
    const name = enumName(to, "CHANGESET_STATE_");
    const b = el("button", { "data-testid": `to-${name}`, class: to === "CHANGESET_STATE_REJECTED" || to === "CHANGESET_STATE_CLOSED" ? "danger" : undefined, onclick: () => {
      if (to === "CHANGESET_STATE_REJECTED" && reason.value.trim() === "") {
        fill(out, "Say why it is rejected: the agent reads the reason.");
        out.hidden = false;
        reason.focus();
        return;
      }
      void act(b, { toState: to, reason: reason.value.trim() });
    } }, LABELS[to] ?? name);
    buttons.push(b);
  }
  let merge = null;
  if (allowed.includes("CHANGESET_STATE_MERGED")) {
    const target = el("input", { type: "text", placeholder: "the repository's default branch", "aria-label": "target branch", "data-testid": "merge-target", size: 24 });
    const b = el("button", { class: "primary", "data-testid": "to-merged", onclick: () => void act(b, { toState: "CHANGESET_STATE_MERGED", reason: reason.value.trim(), targetRef: target.value.trim() }) }, "Merge");
    merge = el("span", { class: "merge" }, b, " into ", target);
  }
  if (buttons.length === 0 && !merge) return null;
  return el("div", { class: "decisions", "data-testid": "decisions" }, el("div", { class: "actions" }, buttons, merge, buttons.length > 0 ? reason : null), out);
}
