// The repositories the caller is granted, a page at a time (ListRepositories).
import { el, fill, status, when } from "./dom.js";
import { call } from "./rpc.js";
import { pager } from "./pager.js";

const PAGE = 50;

export function repositoriesView(main) {
  const body = el("tbody");
  const table = el("table", { "data-testid": "repositories" }, el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Id"), el("th", {}, "Registered"), el("th", {}, "Source"))), body);
  const pages = pager(async (pageToken) => {
    try {
      const r = await call("WorkspaceService", "ListRepositories", { pageSize: PAGE, pageToken });
      fill(body, (r.repositories ?? []).map((repo) =>
        el("tr", { "data-testid": "repository-row", "data-repo": repo.id },
          el("td", {}, el("a", { href: `#/sessions/${repo.id}/active` }, repo.name), " ", el("a", { href: `#/repo/${repo.id}/changesets`, class: "muted" }, "changesets")),
          el("td", { class: "mono" }, repo.id),
          el("td", {}, when(repo.createdAt)),
          el("td", { class: "mono" }, repo.sourcePath ?? ""))));
      if (!r.repositories?.length) fill(body, el("tr", {}, el("td", { colspan: 4, class: "muted" }, "No repository you are granted.")));
      status(undefined);
      return r.nextPageToken ?? "";
    } catch (err) {
      status(err);
      return "";
    }
  });
  fill(main, el("h2", {}, "Repositories"), table, pages.element);
  void pages.first();
  return () => {};
}
