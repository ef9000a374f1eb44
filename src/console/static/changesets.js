// A repository's changesets (#/repo/<id>/changesets/<tab>), a page at a time (ListChangesets
// with states): what waits for review first (submitted, verifying, approved), then the rest by
// state. Live: a changeset event of the repository re-reads the page shown (once per burst).
import { changesetLink } from "./changeset.js";
import { el, enumName, fill, status, when } from "./dom.js";
import { filterTail, onEvent } from "./events.js";
import { pager } from "./pager.js";
import { call } from "./rpc.js";

const PAGE = 50;
const COALESCE_MS = 150;
const TABS = {
  review: ["SUBMITTED", "VERIFYING", "APPROVED"],
  draft: ["DRAFT"],
  merged: ["MERGED"],
  rejected: ["REJECTED"],
  closed: ["CLOSED"],
  all: [],
};

export function changesetsView(main, [repoId, , wanted = "review"]) {
  const tab = wanted in TABS ? wanted : "review";
  const body = el("tbody");
  const tabs = el("div", { class: "tabs" }, Object.keys(TABS).map((t) => el("a", { href: `#/repo/${repoId}/changesets/${t}`, class: t === tab ? "current" : undefined, "data-testid": `tab-${t}` }, t === "review" ? "waiting for review" : t)));
  const table = el("table", { "data-testid": "changesets" },
    el("thead", {}, el("tr", {}, ["Changeset", "State", "Reason", "Created", "Last change"].map((h) => el("th", {}, h)))), body);
  const pages = pager(async (pageToken) => {
    try {
      const r = await call("WorkspaceService", "ListChangesets", { repoId, pageSize: PAGE, pageToken, states: TABS[tab].map((s) => `CHANGESET_STATE_${s}`) });
      const rows = (r.changesets ?? []).map((cs) => el("tr", { "data-testid": "changeset-row", "data-changeset": cs.id, "data-state": enumName(cs.state, "CHANGESET_STATE_") },
        el("td", {}, changesetLink(cs.id)),
        el("td", {}, enumName(cs.state, "CHANGESET_STATE_")),
        el("td", {}, cs.reason ?? ""),
        el("td", {}, when(cs.createdAt)),
        el("td", {}, when(cs.updatedAt))));
      fill(body, rows.length > 0 ? rows : el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No changeset here.")));
      status(undefined);
      return r.nextPageToken ?? "";
    } catch (err) {
      status(err);
      return "";
    }
  });
  fill(main, el("h2", {}, "Changesets of ", el("a", { href: `#/sessions/${repoId}/active` }, repoId)), tabs, table, pages.element);
  filterTail(repoId);
  void pages.first();
  let timer;
  const off = onEvent((e) => {
    if (e.repoId !== repoId || !e.kind.startsWith("changeset.")) return;
    clearTimeout(timer);
    timer = setTimeout(() => void pages.reload(), COALESCE_MS);
  });
  return () => {
    off();
    clearTimeout(timer);
  };
}
