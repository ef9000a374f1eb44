// The live event tail: one WatchEvents stream for the tab, resumed after a drop from the last seq
// it delivered (the server sends stored events after after_seq with no gap and no duplicate).
// Views subscribe to it instead of polling.
import { el, enumName, short, when } from "./dom.js";
import { stream } from "./rpc.js";

const KEEP = 300;
const listeners = new Set();
let lastSeq = "0";
let controller;
let retryMs = 500;

/** Calls `fn(event)` for every event from now on; returns the unsubscribe function. */
export function onEvent(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/**
 * Shows only the events of repository `repoId` (undefined: every event): the view is about that
 * repository. Events are kept either way, so leaving the view shows them all again.
 */
export function filterTail(repoId) {
  const tail = document.getElementById("tail");
  tail.dataset.repo = repoId ?? "";
  for (const li of tail.children) li.hidden = hiddenIn(li, repoId);
  document.getElementById("tail-scope").textContent = repoId ? "of this repository" : "";
}

const hiddenIn = (li, repoId) => Boolean(repoId) && li.dataset.repo !== repoId;

/** The seq the tail resumes after (for tests and the screenshot script: a reconnect continues here). */
export function resumePoint() {
  return lastSeq;
}

function setState(text) {
  document.getElementById("tail-state").textContent = text;
}

function row(e) {
  const t = e.changesetTransitioned;
  return el(
    "li",
    { "data-kind": e.kind, "data-repo": e.repoId ?? "", "data-session": e.sessionId ?? "", "data-changeset": e.changesetId ?? "", "data-seq": e.seq, title: when(e.occurredAt) },
    el("span", { class: "seq" }, e.seq),
    el("span", { class: `kind kind-${e.kind.replace(/\./g, "-")}` }, e.kind),
    t ? el("span", { "data-testid": "tail-transition" }, ` ${enumName(t.fromState, "CHANGESET_STATE_")} → ${enumName(t.toState, "CHANGESET_STATE_")}`) : null,
    e.agentId ? ` ${e.agentId}` : "",
    e.sessionId ? [" session ", el("a", { href: `#/session/${e.sessionId}`, "data-testid": "tail-session" }, short(e.sessionId))] : null,
    e.changesetId ? [" changeset ", el("a", { href: `#/changeset/${e.changesetId}`, "data-testid": "tail-changeset" }, short(e.changesetId))] : null,
    e.reason ? ` (${e.reason})` : "",
  );
}

function deliver(e) {
  lastSeq = e.seq;
  const tail = document.getElementById("tail");
  const li = row(e);
  li.hidden = hiddenIn(li, tail.dataset.repo);
  tail.prepend(li);
  while (tail.childElementCount > KEEP) tail.lastElementChild.remove();
  for (const fn of listeners) fn(e);
}

async function run() {
  const mine = new AbortController();
  controller = mine;
  for (;;) {
    // The server answers a stream with its first event (Connect sends the headers with it): until then, waiting.
    setState(lastSeq === "0" ? "waiting for events" : `resuming after ${lastSeq}`);
    try {
      await stream("WorkspaceService", "WatchEvents", { afterSeq: lastSeq }, (m) => m.event && deliver(m.event), mine.signal, () => {
        retryMs = 500;
        setState("live");
      });
    } catch (err) {
      if (mine.signal.aborted) return;
      setState(`disconnected (${err.reason ?? err.code ?? err.message}); retrying`);
      if (err.code === "unauthenticated" || err.code === "permission_denied") {
        setState(`not allowed: ${err.reason ?? err.code}`);
        return;
      }
    }
    if (mine.signal.aborted) return;
    await new Promise((r) => setTimeout(r, retryMs));
    retryMs = Math.min(retryMs * 2, 10_000);
  }
}

/** (Re)starts the tail, e.g. after the token changed; keeps the resume point. */
export function startTail() {
  controller?.abort();
  void run();
}
