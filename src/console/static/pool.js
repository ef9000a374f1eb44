// The turn pool of every instance, summed (GetPoolStats, admins only), re-read every few seconds while shown.
import { el, fill, status } from "./dom.js";
import { call } from "./rpc.js";

const EVERY_MS = 3000;

export function poolView(main) {
  const stats = el("div", { class: "stats", "data-testid": "pool" });
  const evictions = el("tbody");
  fill(main, el("h2", {}, "Turn pool"), stats, el("h3", {}, "Evictions by reason"), el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Reason"), el("th", {}, "Count"))), evictions));
  const stat = (label, value, testid) => el("div", { class: "stat", "data-testid": testid }, el("b", {}, String(value ?? 0)), label);
  const load = async () => {
    try {
      const p = await call("TurnService", "GetPoolStats", {});
      fill(stats,
        stat("busy", p.busy, "pool-busy"), stat("idle", p.idle, "pool-idle"), stat("awaiting approval", p.awaitingApproval, "pool-awaiting"), stat("capacity", p.capacity, "pool-capacity"),
        stat("warm acquires", p.warmAcquires, "pool-warm"), stat("cold acquires", p.coldAcquires, "pool-cold"), stat("unreserved turns", p.unreservedTurns, "pool-unreserved"));
      const rows = Object.entries(p.evictions ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
      fill(evictions, rows.length ? rows.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))) : el("tr", {}, el("td", { colspan: 2, class: "muted" }, "none")));
      status(undefined);
    } catch (err) {
      status(err);
    }
  };
  void load();
  const timer = setInterval(() => void load(), EVERY_MS);
  return () => clearInterval(timer);
}
