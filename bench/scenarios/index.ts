/**
 * Every scenario, in BENCHMARKS.md order. A new scenario is one file in this directory
 * exporting `scenario: Scenario`, added here; until its feature lands it stays in PENDING.
 */
import type { PendingScenario, Scenario } from "../lib/scenario.js";
import { scenario as health } from "./health.js";
import { scenario as h2load } from "./h2load-check.js";
import { scenario as getWorkspace } from "./get-workspace.js";
import { scenario as connectGetWorkspace } from "./connect-get-workspace.js";
import { scenario as createWorkspace } from "./create-workspace.js";
import { scenario as idleRss } from "./idle-rss.js";
import { scenario as startupReconcile } from "./startup-reconcile.js";

export const SCENARIOS: readonly Scenario[] = [health, h2load, getWorkspace, connectGetWorkspace, createWorkspace, idleRss, startupReconcile];

/** Measured once their issues land; each gets a file here (see bench/README.md, "Adding a scenario"). */
export const PENDING: readonly PendingScenario[] = [
  { name: "write-file", title: "WriteFile 4 KiB with symbol extraction", figure: "throughput and p99", target: "report; p99 < 20 ms", waitsFor: "WriteFile RPC" },
  { name: "watch-events", title: "Event delivery, commit → WatchEvents subscriber, 1,000 subscribers, 500 events/s", figure: "p99 latency", target: "< 25 ms", waitsFor: "WatchEvents wired into build()" },
  { name: "jetstream", title: "Event delivery, commit → JetStream consumer", figure: "p99 latency", target: "< 50 ms", waitsFor: "NATS relay wired into build()" },
  { name: "begin-turn", title: "BeginTurn warm / cold (1,000-file repository)", figure: "server-side p50", target: "< 3 ms / < 300 ms", waitsFor: "turn scheduler (BeginTurn)" },
  { name: "map-walk", title: "Workspace map walk of a 50,000-entry tree, depth unlimited", figure: "ratio to GNU find on the same tree", target: "≥ 0.5", waitsFor: "workspace map" },
  { name: "gc-tick", title: "One GC tick over 100,000 workspaces", figure: "longest event-loop delay (monitorEventLoopDelay)", target: "< 20 ms", waitsFor: "lifecycle GC loop wired into build()" },
];
