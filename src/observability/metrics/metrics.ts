/**
 * Prometheus metrics of one Berth server: its own prom-client Registry (several servers run in
 * one test process; the global default registry would make their names collide).
 *
 * How each family is fed, cheapest first:
 * - read at scrape time from what the domain already keeps (CollectedMetric): pool stats,
 *   evictions, hub subscribers and deliveries, live workspaces in memory;
 * - read at scrape time from a snapshot of a few aggregate queries, refreshed in the
 *   background every refreshIntervalMs (DbSnapshot): stranded/abandoned workspaces, claims, the
 *   outbox backlog and the relay lag. A scrape never queries the database;
 * - incremented by tiny hooks: the pipeline's RpcObserver (RPC latency by method and code, one
 *   Map lookup and a bucket search per RPC), the lifecycle's gcTick, the map wrapper, the relay's
 *   onPublished.
 * The domain modules never import prom-client; they expose counters or take a no-op-by-default hook.
 */
import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";
import type { Logger } from "pino";
import type { ObservedCall, RpcObserver } from "../rpc-observer.js";
import type { TickReport } from "../../sessions/lifecycle.js";
import type { EventHub } from "../../delivery/hub.js";
import type { NatsRelay } from "../../delivery/nats-relay.js";
import type { TurnScheduler } from "../../turns/scheduler.js";
import type { WorkspaceMapService, MapResult } from "../../turns/map/index.js";
import type { WorkspaceRegistry } from "../../sessions/registry.js";
import type { Db } from "../../platform/database.js";
import { CollectedMetric, registerCustom, type Sample } from "./collected.js";
import { RpcHistogram } from "./rpc-histogram.js";
import { DbSnapshot } from "./db-snapshot.js";

/** What the metrics read; each is attached once it exists (build order). */
export interface MetricSources {
  registry?: WorkspaceRegistry;
  events?: EventHub;
  relay?: NatsRelay;
  turns?: TurnScheduler;
}

export interface BerthMetricsOptions {
  readonly db: Db;
  readonly logger: Logger;
  /** JetStream stream of the relay (relay cursor), when NATS_URL is set. */
  readonly relayStream?: string;
  /** How often the database snapshot is refreshed (default 15,000 ms). */
  readonly refreshIntervalMs?: number;
  /** Node.js process metrics (process_*, nodejs_*; default true). */
  readonly processMetrics?: boolean;
}

const MAP_OUTCOMES = ["ok", "stale", "over_budget", "skipped", "cancelled", "failed"] as const;

export class BerthMetrics implements RpcObserver {
  readonly registry = new Registry();
  readonly rpc = new RpcHistogram();
  readonly sources: MetricSources = {};
  readonly snapshot: DbSnapshot;
  private readonly gcTicks: Histogram<string>;
  private readonly gcActions: Counter<"action">;
  private readonly mapRequests: Histogram<"outcome">;
  private readonly mcpRequests: Histogram<"method" | "tool" | "status">;
  private published = 0;

  constructor(o: BerthMetricsOptions) {
    const reg = this.registry;
    this.snapshot = new DbSnapshot({ db: o.db, logger: o.logger, relayStream: o.relayStream, intervalMs: o.refreshIntervalMs ?? 15_000 });
    if (o.processMetrics ?? true) collectDefaultMetrics({ register: reg });
    registerCustom(reg, this.rpc);

    const s = this.sources;
    const snap = this.snapshot;
    const gauge = (name: string, help: string, read: () => Iterable<Sample>) => registerCustom(reg, new CollectedMetric(name, help, "gauge", read));
    const counter = (name: string, help: string, read: () => Iterable<Sample>) => registerCustom(reg, new CollectedMetric(name, help, "counter", read));

    // Workspaces.
    gauge(
      "berth_workspaces",
      "Workspaces by repository and lifecycle state. active: live in this instance's memory (sum over instances); stranded, abandoned: the whole database, from the periodic snapshot (max over instances)",
      function* () {
        if (s.registry !== undefined) {
          const active = new Map<string, number>();
          for (const ws of s.registry.liveWorkspaces()) active.set(ws.repoId, (active.get(ws.repoId) ?? 0) + 1);
          for (const [repo, n] of active) yield [{ repo_id: repo, state: "active" }, n];
        }
        for (const row of snap.workspaces) yield [{ repo_id: row.repoId, state: row.state }, row.count];
      },
    );
    gauge("berth_claims_held", "Symbol claims held, by repository (whole database, from the periodic snapshot)", function* () {
      for (const row of snap.claims) yield [{ repo_id: row.repoId }, row.count];
    });

    // Events.
    gauge("berth_outbox_unsequenced", "Committed events not yet numbered by the sequencer (snapshot)", () => (snap.outbox ? [[{}, snap.outbox.unsequenced]] : []));
    gauge("berth_outbox_head_seq", "Highest sequence number assigned to an event (snapshot)", () => (snap.outbox ? [[{}, snap.outbox.headSeq]] : []));
    gauge("berth_relay_unpublished", "Events stored but not yet acknowledged by JetStream, unsequenced included (snapshot; only with NATS_URL)", () =>
      snap.relay ? [[{ stream: snap.relay.stream }, snap.relay.unpublished]] : [],
    );
    gauge("berth_relay_lag_seconds", "Seconds between the newest stored event and the last one JetStream acknowledged; 0 when nothing waits (snapshot; only with NATS_URL)", () =>
      snap.relay && snap.relay.lagSeconds !== undefined ? [[{ stream: snap.relay.stream }, snap.relay.lagSeconds]] : [],
    );
    gauge("berth_relay_leader", "1 while this instance is the NATS relay leader", () => (s.relay ? [[{}, s.relay.isLeader ? 1 : 0]] : []));
    counter("berth_relay_published_total", "Events this instance published to JetStream and had acknowledged", () => (s.relay ? [[{}, this.published]] : []));
    counter("berth_events_delivered_total", "Events handed to WatchEvents (and in-process) subscribers, replay included", () => (s.events ? [[{}, s.events.delivered]] : []));
    counter("berth_event_hub_reads_total", "Outbox reads by this instance's event hub (a local commit that numbered its own events right after what was fanned out needs none)", () => (s.events ? [[{}, s.events.reads]] : []));
    gauge("berth_event_subscribers", "Event subscribers connected to this instance's hub (WatchEvents streams and in-process followers)", () =>
      s.events ? [[{}, s.events.subscriberCount]] : [],
    );
    gauge("berth_event_hub_seq", "Every stored event up to this seq has been fanned out by this instance's hub", () => (s.events ? [[{}, Number(s.events.headSeq)]] : []));

    // The turn pool.
    gauge("berth_pool_environments", "Seated environments of the turn pool by state (busy, idle, awaiting_approval)", function* () {
      if (s.turns === undefined) return;
      const p = s.turns.stats();
      yield [{ state: "busy" }, p.busy];
      yield [{ state: "idle" }, p.idle];
      yield [{ state: "awaiting_approval" }, p.awaitingApproval];
    });
    gauge("berth_pool_capacity", "Seats of the turn pool (BERTH_ENV_POOL_MAX)", () => (s.turns ? [[{}, s.turns.stats().capacity]] : []));
    counter("berth_pool_evictions_total", "Environments evicted or torn down, by reason", function* () {
      if (s.turns === undefined) return;
      for (const [reason, n] of Object.entries(s.turns.stats().evictions)) yield [{ reason }, Number(n)];
    });
    counter("berth_pool_acquires_total", "Environment acquisitions by kind (warm: reused, cold: materialised)", function* () {
      if (s.turns === undefined) return;
      const p = s.turns.stats();
      yield [{ kind: "warm" }, Number(p.warmAcquires)];
      yield [{ kind: "cold" }, Number(p.coldAcquires)];
    });
    counter("berth_turn_capture_failures_total", "Environments whose changes could not all be captured into the overlay (kept under .unsaved/ or .orphaned/, each stored as turn.capture_failed)", () => (s.turns ? [[{}, s.turns.captureFailures]] : []));
    counter("berth_pool_unreserved_turns_total", "Turns that ran without a seat (pool full)", () => (s.turns ? [[{}, Number(s.turns.stats().unreservedTurns)]] : []));

    // The workspace map.
    this.mapRequests = new Histogram({
      name: "berth_map_duration_seconds",
      help: "Workspace map requests (BeginTurn, GetWorkspaceMap) by outcome, and how long the turn waited; _count is the number of requests",
      labelNames: ["outcome"],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 1.5, 2.5, 5, 10],
      registers: [reg],
    });
    for (const outcome of MAP_OUTCOMES) this.mapRequests.zero({ outcome });

    // The MCP server at /mcp: its requests (the RPCs its tools make are in berth_rpc_duration_seconds).
    this.mcpRequests = new Histogram({
      name: "berth_mcp_request_duration_seconds",
      help: "Requests to the MCP server at /mcp by JSON-RPC method, tool (tools/call) and HTTP status; _count is the number of requests. The RPCs a tool makes are counted in berth_rpc_duration_seconds",
      labelNames: ["method", "tool", "status"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [reg],
    });

    // The lifecycle GC.
    this.gcTicks = new Histogram({
      name: "berth_gc_tick_duration_seconds",
      help: "Duration of a lifecycle GC tick (flush, live sweep, stranded sweep, orphans)",
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [reg],
    });
    this.gcActions = new Counter({ name: "berth_gc_actions_total", help: "What GC ticks did, by action (expired, idle, max_lifetime, disconnected, abandoned, orphans_stranded, errors)", labelNames: ["action"], registers: [reg] });
    gauge("berth_metrics_snapshot_age_seconds", "Age of the database snapshot behind the snapshot-fed gauges", () =>
      snap.refreshedAt !== undefined ? [[{}, (Date.now() - snap.refreshedAt) / 1000]] : [],
    );
  }

  /** Starts the background refresh of the database snapshot. */
  start(): void {
    this.snapshot.start();
  }

  async stop(): Promise<void> {
    await this.snapshot.stop();
  }

  // ---- hooks --------------------------------------------------------------------------------

  /** RpcObserver: every RPC of both transports, at completion. */
  rpcEnded(call: ObservedCall, code: number, seconds: number, line: Record<string, unknown>): void {
    this.rpc.observe(call.entry.path, code, line["code"] as string, seconds);
  }

  /** LifecycleMetrics. */
  gcTick(seconds: number, report: TickReport): void {
    this.gcTicks.observe(seconds);
    const a = this.gcActions;
    if (report.expired) a.inc({ action: "expired" }, report.expired);
    if (report.idle) a.inc({ action: "idle" }, report.idle);
    if (report.maxLifetime) a.inc({ action: "max_lifetime" }, report.maxLifetime);
    if (report.disconnected) a.inc({ action: "disconnected" }, report.disconnected);
    if (report.abandoned) a.inc({ action: "abandoned" }, report.abandoned);
    if (report.orphansStranded) a.inc({ action: "orphans_stranded" }, report.orphansStranded);
    if (report.errors) a.inc({ action: "errors" }, report.errors);
  }

  /** NatsRelay onPublished. */
  relayPublished(): void {
    this.published++;
  }

  /** One request served at /mcp (transport/mcp-route.ts). */
  mcpRequest(method: string, tool: string, status: number, seconds: number): void {
    this.mcpRequests.observe({ method, tool, status: String(status) }, seconds);
  }

  mapResult(result: MapResult, seconds: number): void {
    this.mapRequests.observe({ outcome: result.status }, seconds);
  }

  /** Times every getMap of `maps` (outcome and wait), without touching the map service. */
  instrumentMaps(maps: WorkspaceMapService): void {
    const getMap = maps.getMap.bind(maps);
    maps.getMap = async (root, options) => {
      const t0 = performance.now();
      const r = await getMap(root, options);
      this.mapResult(r, (performance.now() - t0) / 1000);
      return r;
    };
  }

  /** The exposition text (what GET /metrics answers). */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
