// The console's shell: the token form, who the caller is (an admin or not), the hash router and
// the event tail. Views render into <main> and return their cleanup.
import { el, fill, status } from "./dom.js";
import { filterTail, startTail } from "./events.js";
import { poolView } from "./pool.js";
import { repositoriesView } from "./repositories.js";
import { changesetView } from "./changeset.js";
import { changesetsView } from "./changesets.js";
import { call, token } from "./rpc.js";
import { sessionView } from "./session.js";
import { sessionsView } from "./sessions.js";

const VIEWS = { repositories: repositoriesView, sessions: sessionsView, session: sessionView, pool: poolView, changeset: changesetView, repo: changesetsView };
const ctx = { admin: false };
let cleanup = () => {};

/**
 * Whether the server treats the caller as an admin: GetPoolStats needs the role. Only decides
 * which buttons show; every call is checked by the server again.
 */
async function whoAmI() {
  const who = document.getElementById("who");
  try {
    await call("TurnService", "GetPoolStats", {});
    ctx.admin = true;
    who.textContent = "admin";
  } catch (err) {
    ctx.admin = false;
    who.textContent = err.code === "permission_denied" ? "agent" : err.code === "unauthenticated" ? "token needed" : "";
  }
  document.body.dataset.role = ctx.admin ? "admin" : "agent";
  // Without a token an admin can only be the server's anonymous principal: auth is off, and a
  // token box or an "admin" label would only suggest there is something to sign in to.
  const authOff = ctx.admin && token.get() === "";
  document.body.dataset.auth = authOff ? "off" : "on";
  document.getElementById("auth").hidden = authOff;
  for (const e of document.querySelectorAll(".admin-only")) e.hidden = !ctx.admin;
}

function route() {
  cleanup();
  const [name = "repositories", ...args] = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const view = VIEWS[name] ?? repositoriesView;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.view === name);
  const main = document.getElementById("view");
  status(undefined);
  filterTail(undefined);
  cleanup = view(main, args.map(decodeURIComponent), ctx) ?? (() => {});
}

async function signedIn() {
  document.getElementById("sign-out").hidden = token.get() === "";
  await whoAmI();
  startTail();
  route();
}

function init() {
  const form = document.getElementById("auth");
  const input = document.getElementById("token");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    token.set(input.value.trim());
    input.value = "";
    void signedIn();
  });
  document.getElementById("sign-out").addEventListener("click", () => {
    token.set("");
    void signedIn();
  });
  window.addEventListener("hashchange", route);
  if (!document.getElementById("view").firstChild) fill(document.getElementById("view"), el("p", { class: "muted" }, "Loading…"));
  void signedIn();
}

init();
