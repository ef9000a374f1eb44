// One session: its workspace, its files (the merged view: overlay over base, deletions marked),
// the claims it holds and its turns. Live: its own events redraw the parts they change.
import { adminButtons } from "./actions.js";
import { changesetLink } from "./changeset.js";
import { decodePatch, drawDiff, fileOf, splitPatch } from "./diff.js";
import { el, enumName, fill, short, status, when } from "./dom.js";
import { filterTail, onEvent } from "./events.js";
import { call } from "./rpc.js";

const FILES_PAGE = 500;
const TURNS_PAGE = 50;

function facts(ws) {
  const rows = [
    ["Session", ws.sessionId],
    ["Agent", `${ws.agentName} (${ws.agentId})`],
    ["Intent", ws.intent ?? ""],
    ["State", enumName(ws.lifecycleState, "LIFECYCLE_STATE_") + (ws.lifecycleReason ? ` (${ws.lifecycleReason})` : "")],
    ["Changeset", changesetLink(ws.changesetId, ws.changesetId), ` ${enumName(ws.changesetState, "CHANGESET_STATE_")}`],
    ["Base commit", ws.baseCommit ?? ""],
    ["Mode", enumName(ws.mode, "WORKSPACE_MODE_")],
    ["Created", when(ws.createdAt)],
    ["Last activity", when(ws.lastActiveAt)],
  ];
  if (ws.resumedFromSessionId) rows.push(["Resumed from", ws.resumedFromSessionId]);
  return el("dl", { class: "facts", "data-testid": "workspace" }, rows.map(([k, ...v]) => [el("dt", {}, k), el("dd", { class: k === "Session" ? "mono" : undefined }, v)]));
}

/**
 * A list read page by page on demand ("more"): `load(token)` resolves to the page's rows and the
 * next token. A reload (first()) while an earlier read is in flight wins: the earlier one's rows
 * are dropped, so two redraws never interleave their rows.
 */
function more(load, body) {
  let token = "";
  let generation = 0;
  const button = el("button", { hidden: true, onclick: () => void next(generation) }, "More");
  const next = async (gen) => {
    try {
      const page = await load(token);
      if (gen !== generation) return;
      if (token === "") body.replaceChildren();
      body.append(...page.rows);
      token = page.next;
      button.hidden = token === "";
    } catch (err) {
      if (gen !== generation) return;
      status(err);
      button.hidden = true;
    }
  };
  return {
    button,
    first: () => {
      token = "";
      return next(++generation);
    },
  };
}

export function sessionView(main, [sessionId], ctx) {
  const head = el("div");
  const filesBody = el("tbody");
  const claimsBody = el("tbody");
  const turnsBody = el("tbody");
  const current = sessionId;

  const files = more(async (pageToken) => {
    const r = await call("WorkspaceService", "ListFiles", { sessionId: current, pageSize: FILES_PAGE, pageToken, includeDeleted: true });
    const rows = (r.entries ?? []).map((f) => {
      const source = enumName(f.source, "FILE_SOURCE_");
      // Only the overlay's paths differ from the base: those open their diff.
      const name = source === "overlay" ? el("button", { class: "link mono", "data-testid": "file-diff-link", onclick: () => void showDiff(f.path) }, f.path) : f.path;
      return el("tr", { "data-testid": "file-row", "data-path": f.path, "data-source": source, "data-deleted": f.deleted ? "true" : "false" },
        el("td", { class: f.deleted ? "mono deleted" : "mono" }, name),
        el("td", {}, f.deleted ? "deleted" : source),
        el("td", {}, f.deleted ? "" : enumName(f.change, "FILE_CHANGE_")),
        el("td", {}, f.modifiedByOther ? "also changed by another session" : ""));
    });
    return { rows, next: r.nextPageToken ?? "" };
  }, filesBody);
  const claims = more(async (pageToken) => {
    const r = await call("WorkspaceService", "ListClaims", { sessionId: current, pageToken });
    const rows = (r.claims ?? []).map((c) => el("tr", { "data-testid": "claim-row" }, el("td", { class: "mono" }, c.path), el("td", { class: "mono" }, c.symbol || "(whole file)"), el("td", {}, when(c.acquiredAt))));
    return { rows, next: r.nextPageToken ?? "" };
  }, claimsBody);
  const turns = more(async (pageToken) => {
    const r = await call("TurnService", "ListTurns", { sessionId: current, pageSize: TURNS_PAGE, pageToken });
    const rows = (r.turns ?? []).map((t) =>
      el("tr", { "data-testid": "turn-row" },
        el("td", { class: "mono" }, short(t.turnId)),
        el("td", {}, enumName(t.state, "TURN_STATE_")),
        el("td", {}, enumName(t.outcome, "TURN_OUTCOME_")),
        el("td", {}, when(t.startedAt)),
        el("td", {}, when(t.endedAt))));
    return { rows, next: r.nextPageToken ?? "" };
  }, turnsBody);

  const diffTitle = el("h3", { hidden: true }, "Diff");
  const diffBox = el("div", { class: "diff", "data-testid": "file-diff" });
  let stopDiff = () => {};
  let diffAsked = 0;
  const showDiff = async (path) => {
    const asked = ++diffAsked;
    stopDiff();
    diffTitle.hidden = false;
    fill(diffBox, el("p", { class: "muted" }, `Loading the diff of ${path}…`));
    diffBox.dataset.path = path;
    try {
      const r = await call("WorkspaceService", "DiffWorkspace", { sessionId: current });
      if (asked !== diffAsked) return;
      const pathDiff = (r.paths ?? []).find((p) => p.path === path || p.oldPath === path);
      if (!pathDiff) {
        fill(diffBox, el("p", { class: "muted", "data-testid": "diff-none" }, `${path} does not differ from the base.`));
        diffBox.dataset.rendered = "true";
        return;
      }
      stopDiff = drawDiff(diffBox, [{ pathDiff, file: fileOf(splitPatch(decodePatch(r.patch)), pathDiff) }]);
      diffBox.scrollIntoView({ block: "nearest" });
    } catch (err) {
      if (asked === diffAsked) fill(diffBox, el("p", { class: "muted" }, "No diff."));
      status(err);
    }
  };

  const load = async () => {
    try {
      const { workspace: ws } = await call("WorkspaceService", "GetWorkspace", { sessionId: current });
      filterTail(ws.repoId);
      const state = enumName(ws.lifecycleState, "LIFECYCLE_STATE_");
      fill(head,
        el("h2", {}, "Session ", el("span", { class: "mono" }, short(ws.sessionId)), " ", el("a", { href: `#/sessions/${ws.repoId}/${state === "destroyed" ? "active" : state}` }, "(its repository's sessions)")),
        facts(ws),
        ctx.admin ? adminButtons(ws, state, (resumed) => {
          if (resumed) location.hash = `#/session/${resumed}`;
          else void load();
        }) : null);
      status(undefined);
      // Files need a live overlay; a stranded session's files come back with its resume.
      if (state === "active") await files.first();
      else fill(filesBody, el("tr", {}, el("td", { colspan: 4, class: "muted" }, `Not listed while the session is ${state}.`)));
      await claims.first();
      await turns.first();
    } catch (err) {
      if (err.reason === "SESSION_RESUMED" && err.metadata.new_session_id) {
        location.hash = `#/session/${err.metadata.new_session_id}`;
        return;
      }
      status(err);
    }
  };
  const table = (testid, headers, body, pager) => [el("table", { "data-testid": testid }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), body), pager.button];
  fill(main, head,
    el("h3", {}, "Files"), table("files", ["Path", "Source", "Change", ""], filesBody, files),
    diffTitle, diffBox,
    el("h3", {}, "Claims"), table("claims", ["Path", "Symbol", "Since"], claimsBody, claims),
    el("h3", {}, "Turns"), table("turns", ["Turn", "State", "Outcome", "Started", "Ended"], turnsBody, turns));
  void load();
  let timer;
  const off = onEvent((e) => {
    if (e.sessionId !== current && e.sessionResumed?.oldSessionId !== current) return;
    clearTimeout(timer);
    timer = setTimeout(() => void load(), 150);
  });
  return () => {
    off();
    clearTimeout(timer);
    stopDiff();
  };
}
