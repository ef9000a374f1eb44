// One changeset (#/changeset/<id>): its state, commit and branch, the decisions the caller may
// take (decisions.js), its history, its checks (checks.js), its review comments (comments.js, and
// beside their lines: inline-comments.js), its sessions and the combined diff of their overlays
// (DiffChangeset) with the paths on which they differ marked. Live: its events re-read it.
import { checksPanel } from "./checks.js";
import { commentsPanel } from "./comments.js";
import { decisionButtons, refusal } from "./decisions.js";
import { decodePatch, drawDiff, fileOf, splitPatch } from "./diff.js";
import { el, enumName, fill, short, status, when } from "./dom.js";
import { filterTail, onEvent } from "./events.js";
import { inlineComments } from "./inline-comments.js";
import { call } from "./rpc.js";

const COALESCE_MS = 150;

const stateName = (s) => enumName(s, "CHANGESET_STATE_");

/** A link to a changeset's page, for every place that shows a changeset id. */
export function changesetLink(id, label = short(id)) {
  return el("a", { href: `#/changeset/${id}`, class: "mono", "data-testid": "changeset-link" }, label);
}

function facts(r) {
  const cs = r.changeset;
  const rows = [
    ["Changeset", cs.id],
    ["Repository", el("a", { href: `#/repo/${cs.repoId}/changesets` }, cs.repoId)],
    ["State", el("span", { class: `cs-state cs-${stateName(cs.state)}`, "data-testid": "changeset-state" }, stateName(cs.state)), cs.reason ? el("span", { class: "muted" }, ` (${cs.reason})`) : null],
    ["Created", when(cs.createdAt)],
    ["Last change", when(cs.updatedAt)],
  ];
  if (cs.commitId) rows.push(["Commit", el("span", { class: "mono", "data-testid": "changeset-commit" }, cs.commitId), cs.committedAt ? ` ${when(cs.committedAt)}` : ""]);
  if (r.branch) rows.push(["Branch", el("span", { class: "mono" }, r.branch)]);
  if (r.mergedInto) rows.push(["Merged into", el("span", { class: "mono", "data-testid": "merged-into" }, r.mergedInto)]);
  return el("dl", { class: "facts", "data-testid": "changeset" }, rows.map(([k, ...v]) => [el("dt", {}, k), el("dd", { class: k === "Changeset" ? "mono" : undefined }, v)]));
}

function historyRows(transitions) {
  return (transitions ?? []).map((t) => el("tr", { "data-testid": "history-row" },
    el("td", {}, when(t.at)),
    el("td", {}, `${stateName(t.from)} → ${stateName(t.to)}`),
    el("td", { class: "mono" }, t.who ?? ""),
    el("td", {}, t.reason ?? "")));
}

function sessionRows(sessions) {
  return (sessions ?? []).map((s) => el("tr", { "data-testid": "changeset-session", "data-session": s.sessionId },
    el("td", {}, el("a", { href: `#/session/${s.sessionId}` }, s.agentName || short(s.sessionId)), el("div", { class: "muted mono" }, s.agentId)),
    el("td", {}, s.intent ?? ""),
    el("td", {}, enumName(s.lifecycleState, "LIFECYCLE_STATE_")),
    el("td", { class: "mono" }, short(s.baseCommit))));
}

export function changesetView(main, [changesetId]) {
  const head = el("div");
  const decisions = el("div");
  const merged = el("div", { "data-testid": "merge-result" });
  const history = el("tbody");
  const sessions = el("tbody");
  const conflicts = el("div", { "data-testid": "conflicts" });
  const diffBox = el("div", { class: "diff", "data-testid": "changeset-diff" });
  const checks = checksPanel(changesetId);
  const comments = commentsPanel(changesetId, (list) => inline.set(list));
  const inline = inlineComments({ card: comments.card, add: comments.add, refusalOf: refusal });
  diffBox.addEventListener("click", inline.click);
  let sessionIds = new Set();
  let stopDiff = () => {};
  let drawnChoice = "";

  const loadFacts = async () => {
    try {
      const r = await call("WorkspaceService", "GetChangeset", { changesetId });
      filterTail(r.changeset.repoId);
      fill(head, el("h2", {}, "Changeset ", el("span", { class: "mono" }, short(changesetId))), facts(r));
      // Redrawn only when the choice changed: a refusal shown or a reason being typed survives
      // the re-reads every event of the changeset causes.
      const choice = JSON.stringify([r.changeset.state, r.allowedTransitions ?? []]);
      if (choice !== drawnChoice) {
        drawnChoice = choice;
        fill(decisions, decisionButtons(r.changeset, r.allowedTransitions ?? [], (t) => {
          if (t.merge) showMerge(t.merge);
          void loadFacts();
        }));
      }
      fill(history, historyRows(r.transitions));
      fill(sessions, sessionRows(r.sessions));
    } catch (err) {
      status(err);
    }
  };
  const showMerge = (m) => fill(merged, el("p", { class: "ok" }, `Merged into ${m.targetRef}: ${short(m.oldCommitId)} → ${short(m.newCommitId)}${m.fastForward ? " (fast-forward)" : ""}.`));

  // A diff asked for later wins: an earlier one's answer is dropped.
  let diffAsked = 0;
  const loadDiff = async () => {
    const asked = ++diffAsked;
    try {
      const r = await call("WorkspaceService", "DiffChangeset", { changesetId });
      if (asked !== diffAsked) return;
      sessionIds = new Set(r.sessionIds ?? []);
      const byPath = new Map((r.conflicts ?? []).map((c) => [c.path, c]));
      fill(conflicts, byPath.size === 0 ? null : el("p", { class: "warn" }, `The sessions differ on ${byPath.size} path(s): `, [...byPath.keys()].map((p, i) => [i > 0 ? ", " : "", el("span", { class: "mono" }, p)])));
      stopDiff();
      const files = splitPatch(decodePatch(r.patch));
      const paths = r.paths ?? [];
      if (paths.length === 0) {
        fill(diffBox, el("p", { class: "muted" }, "No change against the base."));
        diffBox.dataset.rendered = "true";
        return;
      }
      inline.reset();
      stopDiff = drawDiff(diffBox, paths.map((pathDiff) => ({ pathDiff, file: fileOf(files, pathDiff), conflict: byPath.get(pathDiff.path) })), inline.decorate);
    } catch (err) {
      if (asked !== diffAsked) return;
      // A merged or closed changeset has no live overlay to diff: its commit says what it did.
      fill(diffBox, el("p", { class: "muted", "data-testid": "diff-unavailable" }, `No combined diff: ${err.reason ?? err.code}.`));
      diffBox.dataset.rendered = "true";
    }
  };

  const table = (testid, headers, body) => el("table", { "data-testid": testid }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), body);
  fill(main, head, decisions, merged,
    el("h3", {}, "History"), table("history", ["When", "Transition", "Who", "Reason"], history),
    el("h3", {}, "Checks"), checks.node,
    el("h3", {}, "Comments"), comments.node,
    el("h3", {}, "Sessions"), table("changeset-sessions", ["Agent", "Intent", "State", "Base"], sessions),
    el("h3", {}, "Combined diff"), conflicts, diffBox);
  void loadFacts();
  void loadDiff();
  void checks.load();
  void comments.load();

  let factsTimer;
  let diffTimer;
  let checksTimer;
  let commentsTimer;
  const off = onEvent((e) => {
    const mine = e.changesetId === changesetId;
    if (mine && e.kind.startsWith("changeset.")) {
      clearTimeout(factsTimer);
      factsTimer = setTimeout(() => void loadFacts(), COALESCE_MS);
    }
    if (mine && e.kind.startsWith("verification.")) {
      clearTimeout(checksTimer);
      checksTimer = setTimeout(() => void checks.load(), COALESCE_MS);
    }
    if (mine && e.kind.startsWith("comment.")) {
      clearTimeout(commentsTimer);
      commentsTimer = setTimeout(() => void comments.load(), COALESCE_MS);
    }
    if ((mine && e.kind.startsWith("session.")) || (e.kind.startsWith("file.") && sessionIds.has(e.sessionId))) {
      clearTimeout(diffTimer);
      diffTimer = setTimeout(() => void loadDiff(), COALESCE_MS);
    }
  });
  return () => {
    off();
    clearTimeout(factsTimer);
    clearTimeout(diffTimer);
    clearTimeout(checksTimer);
    clearTimeout(commentsTimer);
    stopDiff();
  };
}
