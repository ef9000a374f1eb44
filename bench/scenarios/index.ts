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
import { scenario as firstStart } from "./first-start.js";
import { scenario as writeFile } from "./write-file.js";
import { scenario as watchEvents } from "./watch-events.js";
import { scenario as jetstream } from "./jetstream.js";
import { scenario as natsFanout } from "./nats-fanout.js";
import { scenario as beginTurn } from "./begin-turn.js";
import { scenario as mapWalk } from "./map-walk.js";
import { scenario as gcTick } from "./gc-tick.js";
import { scenario as twoInstances } from "./two-instances.js";
import { scenario as mcpReadFile } from "./mcp-read-file.js";
import { scenario as remoteRepository } from "./remote-repository.js";
import { scenario as landing } from "./landing.js";
import { scenario as landingMemory } from "./landing-memory.js";

export const SCENARIOS: readonly Scenario[] = [health, h2load, getWorkspace, connectGetWorkspace, createWorkspace, idleRss, startupReconcile, firstStart, writeFile, watchEvents, jetstream, natsFanout, beginTurn, mapWalk, gcTick, twoInstances, mcpReadFile, landing, landingMemory, remoteRepository];

/** Measured once their issues land; each gets a file here (see bench/README.md, "Adding a scenario"). */
export const PENDING: readonly PendingScenario[] = [
];
