/**
 * Metrics and traces of a real server: /metrics scraped after real RPCs on both transports,
 * trace context from `traceparent` in the RPC's log line, and spans received by a fake OTLP
 * collector (a local HTTP server capturing the POSTs).
 */
import http from "node:http";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";

interface Captured {
  readonly path: string;
  readonly contentType: string | undefined;
  readonly body: { resourceSpans: { resource: { attributes: { key: string; value: Record<string, unknown> }[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
}

/** Prometheus text → value of one series (exact label match, labels in any order). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("#") || line === "") continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got: Record<string, string> = {};
    for (const lm of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) got[lm[1]!] = lm[2]!;
    if (Object.keys(got).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe("metrics and traces", () => {
  let berth: TestBerth;
  let collector: http.Server;
  const posts: Captured[] = [];
  let collectorUrl = "";

  beforeAll(async () => {
    collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        posts.push({ path: req.url ?? "", contentType: req.headers["content-type"], body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Captured["body"] });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => collector.listen(0, "127.0.0.1", () => r()));
    collectorUrl = `http://127.0.0.1:${(collector.address() as { port: number }).port}`;
    berth = await startBerth({
      env: {
        BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-metrics-envs-")),
        OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl,
        OTEL_SERVICE_NAME: "berth-test",
      },
    });
  });

  afterAll(async () => {
    await berth?.close();
    await new Promise<void>((r) => collector.close(() => r()));
  });

  async function scrape(): Promise<string> {
    expect(berth.server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await fetch(berth.server.metricsUrl!);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    return res.text();
  }

  it("counts RPCs by method and code, with latency histograms, on both transports", async () => {
    const repo = (await berth.connect.registerRepository({ name: "metrics-demo" })).repository!;
    const create = "/berth.v1.WorkspaceService/CreateWorkspace";
    const before = await scrape();
    const n0 = sample(before, "berth_rpc_duration_seconds_count", { method: create, code: "OK" }) ?? 0;

    await berth.connect.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "claude-1" });
    await berth.grpc.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "claude-2" });
    await expect(berth.connect.getWorkspace({ sessionId: crypto.randomUUID() })).rejects.toThrow();

    const after = await scrape();
    expect(sample(after, "berth_rpc_duration_seconds_count", { method: create, code: "OK" })).toBe(n0 + 2);
    expect(sample(after, "berth_rpc_duration_seconds_count", { method: "/berth.v1.WorkspaceService/GetWorkspace", code: "NOT_FOUND" })).toBe(1);
    // A histogram: cumulative buckets, +Inf equals _count, a positive _sum.
    const inf = sample(after, "berth_rpc_duration_seconds_bucket", { method: create, code: "OK", le: "+Inf" });
    expect(inf).toBe(n0 + 2);
    expect(sample(after, "berth_rpc_duration_seconds_bucket", { method: create, code: "OK", le: "300" })).toBe(n0 + 2);
    expect(sample(after, "berth_rpc_duration_seconds_sum", { method: create, code: "OK" })!).toBeGreaterThan(0);
    expect(after).toContain("# TYPE berth_rpc_duration_seconds histogram");
    // Process metrics come from this server's own registry.
    expect(after).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it("reports workspaces by repository and state, and the pool, as they are", async () => {
    const repo = (await berth.connect.registerRepository({ name: "metrics-gauges" })).repository!;
    const a = (await berth.connect.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "claude-a" })).workspace!;
    const b = (await berth.connect.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "claude-b" })).workspace!;
    const c = (await berth.connect.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "claude-c" })).workspace!;
    await berth.connect.strandSession({ sessionId: b.sessionId, reason: "test" });
    await berth.connect.abandonSession({ sessionId: c.sessionId, reason: "test" });
    await berth.server.metrics.snapshot.refresh();

    let text = await scrape();
    expect(sample(text, "berth_workspaces", { repo_id: repo.id, state: "active" })).toBe(1);
    expect(sample(text, "berth_workspaces", { repo_id: repo.id, state: "stranded" })).toBe(1);
    expect(sample(text, "berth_workspaces", { repo_id: repo.id, state: "abandoned" })).toBe(1);
    expect(sample(text, "berth_outbox_unsequenced")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "berth_outbox_head_seq")).toBeGreaterThan(0);
    expect(sample(text, "berth_metrics_snapshot_age_seconds")).toBeLessThan(60);
    expect(sample(text, "berth_pool_capacity")).toBe(64);
    expect(sample(text, "berth_pool_environments", { state: "busy" })).toBe(0);

    // A turn seats an environment: the pool gauge shows it busy, the map outcome is counted.
    const turns = createClient(TurnService, createConnectTransport({ baseUrl: berth.server.httpUrl, httpVersion: "1.1" }));
    await turns.beginTurn({ sessionId: a.sessionId, clientTurnId: "t1" });
    text = await scrape();
    expect(sample(text, "berth_pool_environments", { state: "busy" })).toBe(1);
    expect(sample(text, "berth_pool_acquires_total", { kind: "cold" })).toBe(1);
    const maps = ["ok", "stale", "over_budget", "skipped", "cancelled", "failed"].reduce((n, outcome) => n + (sample(text, "berth_map_duration_seconds_count", { outcome }) ?? 0), 0);
    expect(maps).toBe(1);

    // GC tick duration is observed.
    await berth.server.lifecycle.tick();
    text = await scrape();
    expect(sample(text, "berth_gc_tick_duration_seconds_count")).toBeGreaterThanOrEqual(1);
  });

  it("counts events delivered and subscribers connected", async () => {
    const baseline = sample(await scrape(), "berth_event_subscribers")!; // in-process followers (overlay, turns)
    const ac = new AbortController();
    const stream = berth.connect.watchEvents({ afterSeq: 0n }, { signal: ac.signal });
    const it = stream[Symbol.asyncIterator]();
    await it.next(); // at least one stored event from the tests above
    let text = await scrape();
    expect(sample(text, "berth_event_subscribers")).toBe(baseline + 1);
    expect(sample(text, "berth_events_delivered_total")).toBeGreaterThanOrEqual(1);
    ac.abort();
    await it.next().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    text = await scrape();
    expect(sample(text, "berth_event_subscribers")).toBe(baseline);
  });

  it("puts an incoming traceparent's trace id into the RPC's log line (Connect and gRPC)", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "00f067aa0ba902b7";
    await berth.connect.listRepositories({}, { headers: { traceparent: `00-${traceId}-${parent}-01` } });
    const grpcTrace = "0af7651916cd43dd8448eb211c80319c";
    await berth.grpc.listRepositories({}, { metadata: { traceparent: `00-${grpcTrace}-b7ad6b7169203331-01` } });

    const lines = berth.logs.filter((l) => l["msg"] === "rpc" && l["method"] === "/berth.v1.WorkspaceService/ListRepositories");
    const viaConnect = lines.find((l) => l["trace_id"] === traceId);
    expect(viaConnect).toBeDefined();
    expect(viaConnect!["span_id"]).toMatch(/^[0-9a-f]{16}$/);
    expect(viaConnect!["span_id"]).not.toBe(parent);
    expect(lines.find((l) => l["trace_id"] === grpcTrace)).toBeDefined();

    // An invalid header starts a new trace rather than failing the call.
    await berth.connect.listRepositories({}, { headers: { traceparent: "garbage" } });
  });

  it("exports a span per RPC to the OTLP/HTTP collector", async () => {
    const traceId = "11112222333344445555666677778888";
    await berth.connect.listRepositories({}, { headers: { traceparent: `00-${traceId}-aaaabbbbccccdddd-01` } });
    // Not sampled upstream: logged, not exported.
    const unsampled = "99990000999900009999000099990000";
    await berth.connect.listRepositories({}, { headers: { traceparent: `00-${unsampled}-aaaabbbbccccdddd-00` } });
    await berth.server.spanExporter!.flush();

    expect(posts.length).toBeGreaterThan(0);
    expect(posts.every((p) => p.path === "/v1/traces" && p.contentType === "application/json")).toBe(true);
    const resource = posts[0]!.body.resourceSpans[0]!.resource.attributes;
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "berth-test" } });
    const spans = posts.flatMap((p) => p.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
    const span = spans.find((s) => s["traceId"] === traceId);
    expect(span).toMatchObject({ name: "berth.v1.WorkspaceService/ListRepositories", kind: 2, parentSpanId: "aaaabbbbccccdddd", status: { code: 0 } });
    expect(BigInt(span!["endTimeUnixNano"] as string)).toBeGreaterThanOrEqual(BigInt(span!["startTimeUnixNano"] as string));
    expect(span!["attributes"]).toContainEqual({ key: "rpc.method", value: { stringValue: "ListRepositories" } });
    const logged = berth.logs.find((l) => l["trace_id"] === traceId);
    expect(span!["spanId"]).toBe(logged!["span_id"]);
    expect(spans.find((s) => s["traceId"] === unsampled)).toBeUndefined();
    // Calls without a traceparent are root spans of new traces.
    expect(spans.some((s) => s["parentSpanId"] === undefined && /^[0-9a-f]{32}$/.test(s["traceId"] as string))).toBe(true);
  });
});
