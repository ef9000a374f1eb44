// A changeset's checks (ListVerifications): each run of its repository's check with its state,
// exit, times and the tail of its output. Re-read when one of its verification.* events arrives,
// so a running check's output shows as it comes and its end without a reload.
import { el, enumName, fill, short, when } from "./dom.js";
import { call } from "./rpc.js";

function runView(v) {
  const state = enumName(v.state, "VERIFICATION_STATE_");
  return el("div", { class: "check", "data-testid": "check", "data-state": state },
    el("div", {},
      el("b", { class: `check-${state}`, "data-testid": "check-state" }, state), " ",
      el("span", { class: "mono" }, (v.check?.argv ?? []).join(" ")), " ",
      el("span", { class: "muted" }, [v.reason, v.instance ? `on ${v.instance}` : "", when(v.startedAt), v.finishedAt ? `→ ${when(v.finishedAt)}` : "", v.commitId ? `commit ${short(v.commitId)}` : ""].filter(Boolean).join(" · "))),
    el("pre", { class: "check-output", "data-testid": "check-output" }, v.outputTail ?? ""));
}

/** The panel and its refresh: `load()` re-reads the runs (newest last, as the server lists them). */
export function checksPanel(changesetId) {
  const node = el("div", { "data-testid": "checks" });
  let asked = 0;
  const load = async () => {
    const mine = ++asked;
    try {
      const r = await call("WorkspaceService", "ListVerifications", { changesetId });
      if (mine !== asked) return;
      const runs = r.verifications ?? [];
      fill(node, runs.length === 0 ? el("p", { class: "muted" }, "No check has run on this changeset.") : runs.map(runView));
    } catch (err) {
      if (mine === asked) fill(node, el("p", { class: "muted" }, `Checks unavailable: ${err.reason ?? err.code}.`));
    }
  };
  return { node, load };
}
