// A repository's sessions in one state, a page at a time (ListSessions with states). Live: an
// event about the repository's sessions re-reads the page shown (one page, coalesced), and rows
// are updated in place by workspace id, so 10,000 sessions cost one page per burst of events.
import { adminButtons } from "./actions.js";
import { changesetLink } from "./changeset.js";
import { el, enumName, fill, short, status, when } from "./dom.js";
import { filterTail, onEvent } from "./events.js";
import { pager } from "./pager.js";
import { call } from "./rpc.js";

const PAGE = 50;
const STATES = ["active", "stranded", "abandoned"];
const COALESCE_MS = 150;

function cells(s, admin, refresh) {
  const state = enumName(s.lifecycleState, "LIFECYCLE_STATE_");
  return [
    el("td", {}, el("a", { href: `#/session/${s.sessionId}`, "data-testid": "session-link" }, s.agentName || short(s.sessionId)), el("div", { class: "muted mono" }, s.agentId)),
    el("td", {}, s.intent ?? ""),
    el("td", { class: "mono" }, changesetLink(s.changesetId), el("span", { class: "badge" }, enumName(s.changesetState, "CHANGESET_STATE_"))),
    el("td", {}, when(s.lastActiveAt)),
    el("td", { class: `state-${state}`, "data-testid": "session-state" }, state, s.lifecycleReason ? el("div", { class: "muted" }, s.lifecycleReason) : null),
    el("td", {}, admin ? adminButtons(s, state, refresh) : null),
  ];
}

export function sessionsView(main, [repoId, wanted = "active"], ctx) {
  const state = STATES.includes(wanted) ? wanted : "active";
  const body = el("tbody");
  /** workspace id → [row, the JSON it shows]: a row is redrawn only when its session changed. */
  const rows = new Map();
  const tabs = el("div", { class: "tabs" }, STATES.map((s) => el("a", { href: `#/sessions/${repoId}/${s}`, class: s === state ? "current" : undefined, "data-testid": `tab-${s}` }, s)));
  const table = el("table", { "data-testid": "sessions" },
    el("thead", {}, el("tr", {}, ["Agent", "Intent", "Changeset", "Last activity", "State", ""].map((h) => el("th", {}, h)))), body);

  let refresh = () => {};
  const pages = pager(async (pageToken) => {
    try {
      const r = await call("WorkspaceService", "ListSessions", { repoId, pageSize: PAGE, pageToken, states: [`LIFECYCLE_STATE_${state.toUpperCase()}`] });
      const sessions = r.sessions ?? [];
      const keep = new Set(sessions.map((s) => s.workspaceId));
      for (const [id, [tr]] of rows) {
        if (keep.has(id)) continue;
        tr.remove();
        rows.delete(id);
      }
      let before = null;
      for (const s of [...sessions].reverse()) {
        const json = JSON.stringify(s);
        let entry = rows.get(s.workspaceId);
        if (!entry) {
          entry = [el("tr", { "data-testid": "session-row" }), ""];
          rows.set(s.workspaceId, entry);
        }
        const [tr, shown] = entry;
        if (shown !== json) {
          fill(tr, cells(s, ctx.admin, refresh));
          tr.dataset.session = s.sessionId;
          tr.dataset.state = enumName(s.lifecycleState, "LIFECYCLE_STATE_");
          entry[1] = json;
        }
        // Keep the page's order (oldest first) without moving rows that are already in place.
        if (tr.nextSibling !== before || tr.parentNode !== body) body.insertBefore(tr, before);
        before = tr;
      }
      empty.hidden = sessions.length > 0;
      status(undefined);
      return r.nextPageToken ?? "";
    } catch (err) {
      status(err);
      return "";
    }
  });
  let timer;
  refresh = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void pages.reload(), COALESCE_MS);
  };
  const empty = el("p", { class: "muted", hidden: true }, `No ${state} session.`);
  const repoName = el("span", {}, short(repoId));
  fill(main, el("h2", {}, "Sessions of ", repoName, " ", el("a", { href: `#/repo/${repoId}/changesets`, "data-testid": "repo-changesets" }, "(its changesets)")), tabs, table, empty, pages.element, el("button", { onclick: () => void pages.reload() }, "Refresh"));
  call("WorkspaceService", "ListRepositories", { pageSize: 1000 }).then((r) => {
    const repo = (r.repositories ?? []).find((x) => x.id === repoId);
    if (repo) repoName.textContent = repo.name;
  }, () => {});
  filterTail(repoId);
  void pages.first();
  const off = onEvent((e) => {
    if (e.repoId === repoId && (e.kind.startsWith("session.") || e.kind.startsWith("changeset."))) refresh();
  });
  return () => {
    off();
    clearTimeout(timer);
  };
}
