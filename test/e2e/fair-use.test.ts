/**
 * Fair use (issue 13) through the real server: one agent at its limit of concurrent calls gets
 * RESOURCE_EXHAUSTED with a RetryInfo and a QuotaFailure, on both ports, while other agents are
 * served; streams are counted apart. A workspace at its overlay quota (files, bytes) gets
 * RESOURCE_EXHAUSTED OVERLAY_QUOTA_EXCEEDED with a QuotaFailure naming the workspace and nothing
 * changes; and the quota holds for writes spread over two instances of one database.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure, rpcFailure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { eventKinds, gitRepo, overlayRows, utf8 } from "../overlay/helpers.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");

needs({ postgres: true })("concurrent calls per agent", () => {
  const TOKENS = { alice: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };
  let berth: TestBerth;
  let repoId: string;
  let lock: pg.Client;
  const grpcAs = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });
  const connectAs = (who: keyof typeof TOKENS) =>
    createClient(WorkspaceService, createConnectTransport({ baseUrl: berth.server.httpUrl, httpVersion: "1.1", interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${TOKENS[who]}`), next(req))] }));

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-fair-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.bob), agent_id: "bob", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"], repos: ["*"] },
      ],
    }));
    berth = await startBerth({
      instances: 1,
      env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_MAX_CALLS_PER_AGENT: "2", BERTH_MAX_STREAMS_PER_AGENT: "1", BERTH_ENV_ROOT: path.join(dir, "envs") },
    });
    const ops = grpcAs("ops");
    repoId = (await ops.registerRepository({ name: "fair-use", sourcePath: gitRepo().dir })).repository!.id;
    ops.close();
    lock = new pg.Client({ connectionString: berth.database.url });
    await lock.connect();
  });
  afterAll(async () => {
    await lock?.end();
    await berth?.close();
  });

  it("an agent at BERTH_MAX_CALLS_PER_AGENT gets RESOURCE_EXHAUSTED with RetryInfo and QuotaFailure on both ports; other agents are unaffected", async () => {
    const alice = grpcAs("alice");
    const aliceConnect = connectAs("alice");
    const bob = grpcAs("bob");
    try {
      const { workspace } = await alice.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL });
      const limits = berth.server.callLimits;
      // Two of alice's writes held in flight: her workspace row is locked by another connection.
      await lock.query("BEGIN");
      await lock.query("SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE", [workspace!.workspaceId]);
      const held = [
        alice.writeFile({ sessionId: workspace!.sessionId, path: "held-1.txt", content: utf8("one") }),
        aliceConnect.writeFile({ sessionId: workspace!.sessionId, path: "held-2.txt", content: utf8("two") }),
      ];
      try {
        await vi.waitFor(() => expect(limits.inFlight("alice", "call")).toBe(2), { timeout: 10_000, interval: 10 });

        for (const refused of [await failure(alice.listRepositories({})), await failure(aliceConnect.listRepositories({}))]) {
          expect(refused).toMatchObject({ code: "RESOURCE_EXHAUSTED", reason: "TOO_MANY_CALLS" });
          expect(refused.metadata).toMatchObject({ agent_id: "alice", limit: "2", in_flight: "2", quota: "BERTH_MAX_CALLS_PER_AGENT" });
          expect(refused.retryDelayMs).toBeGreaterThan(0);
          expect(refused.quota).toEqual([{ subject: "agent:alice", description: expect.stringContaining("2 of 2") }]);
        }
        // bob is served meanwhile, on both ports.
        expect((await bob.listRepositories({})).repositories.map((r) => r.id)).toContain(repoId);
        expect((await connectAs("bob").listRepositories({})).repositories.map((r) => r.id)).toContain(repoId);
      } finally {
        await lock.query("ROLLBACK");
      }
      // The held calls complete, give their slots back, and alice is served again.
      await Promise.all(held);
      expect(limits.inFlight("alice", "call")).toBe(0);
      expect((await alice.listRepositories({})).repositories.length).toBeGreaterThan(0);
    } finally {
      alice.close();
      bob.close();
    }
  });

  it("streams are counted apart (BERTH_MAX_STREAMS_PER_AGENT): a second stream is refused, unary calls still served", async () => {
    const alice = grpcAs("alice");
    const bob = grpcAs("bob");
    const ac = new AbortController();
    const bobAc = new AbortController();
    const drain = async (it: AsyncIterable<unknown>) => {
      try {
        for await (const _ of it) void _;
      } catch (err) {
        if (!ac.signal.aborted && !bobAc.signal.aborted) throw err;
      }
    };
    try {
      const first = drain(alice.watchEvents({ afterSeq: 0n }, { signal: ac.signal }));
      await vi.waitFor(() => expect(berth.server.callLimits.inFlight("alice", "stream")).toBe(1), { timeout: 10_000, interval: 10 });
      const second = await failure((async () => {
        for await (const _ of alice.watchEvents({ afterSeq: 0n })) void _;
      })());
      expect(second).toMatchObject({ code: "RESOURCE_EXHAUSTED", reason: "TOO_MANY_STREAMS" });
      expect(second.quota?.[0]?.subject).toBe("agent:alice");
      expect(second.retryDelayMs).toBeGreaterThan(0);
      // Unary calls are not held back by the open stream, and bob may open his.
      expect((await alice.listRepositories({})).repositories.length).toBeGreaterThan(0);
      const bobs = drain(bob.watchEvents({ afterSeq: 0n }, { signal: bobAc.signal }));
      await vi.waitFor(() => expect(berth.server.callLimits.inFlight("bob", "stream")).toBe(1), { timeout: 10_000, interval: 10 });
      ac.abort();
      bobAc.abort();
      await Promise.all([first, bobs]);
      await vi.waitFor(() => expect(berth.server.callLimits.inFlight("alice", "stream")).toBe(0), { timeout: 10_000, interval: 10 });
    } finally {
      ac.abort();
      bobAc.abort();
      alice.close();
      bob.close();
    }
  });
});

describe("overlay quota per workspace", () => {
  let berth: TestBerth;
  let repoId: string;
  let agents = 0;

  beforeAll(async () => {
    berth = await startBerth({ instances: 1, env: { BERTH_MAX_OVERLAY_FILES: "3", BERTH_MAX_OVERLAY_BYTES: "100" } });
    repoId = (await berth.grpc.registerRepository({ name: "quota", sourcePath: gitRepo().dir })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("a write over the overlay quota is RESOURCE_EXHAUSTED OVERLAY_QUOTA_EXCEEDED with a QuotaFailure, and the overlay is unchanged", async () => {
    const { workspace } = await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: `quota-${++agents}` });
    const ws = workspace!;
    const db = berth.database.opened.db;
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "a.txt", content: utf8("a".repeat(40)) });
    await berth.connect.writeFile({ sessionId: ws.sessionId, path: "b.txt", content: utf8("b".repeat(40)) });
    const rowsBefore = await overlayRows(db, ws.workspaceId);
    const eventsBefore = await eventKinds(db, ws.workspaceId);

    // Bytes: 80 held, 30 more would make 110 > 100.
    for (const client of [berth.grpc, berth.connect]) {
      const f = await failure(client.writeFile({ sessionId: ws.sessionId, path: "c.txt", content: utf8("c".repeat(30)) }));
      expect(f).toMatchObject({ code: "RESOURCE_EXHAUSTED", reason: "OVERLAY_QUOTA_EXCEEDED" });
      expect(f.metadata).toMatchObject({ workspace_id: ws.workspaceId, path: "c.txt", quota: "BERTH_MAX_OVERLAY_BYTES", limit: "100", used: "80", requested: "110" });
      expect(f.quota).toEqual([{ subject: `workspace:${ws.workspaceId}`, description: expect.stringContaining("80 of 100 bytes") }]);
      expect(f.retryDelayMs).toBeUndefined();
    }
    // A rewrite that grows past the limit is refused too; the file keeps its content.
    expect(await failure(berth.grpc.writeFile({ sessionId: ws.sessionId, path: "a.txt", content: utf8("A".repeat(61)) }))).toMatchObject({ reason: "OVERLAY_QUOTA_EXCEEDED" });
    expect(new TextDecoder().decode((await berth.grpc.readFile({ sessionId: ws.sessionId, path: "a.txt" })).content)).toBe("a".repeat(40));
    expect(await failure(berth.grpc.readFile({ sessionId: ws.sessionId, path: "c.txt" }))).toMatchObject({ reason: "FILE_NOT_FOUND" });
    expect(await overlayRows(db, ws.workspaceId)).toEqual(rowsBefore);
    expect(await eventKinds(db, ws.workspaceId)).toEqual(eventsBefore);

    // Shrinking makes room; the file count is the next limit (3 rows).
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "a.txt", content: utf8("a".repeat(10)) });
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "c.txt", content: utf8("c".repeat(30)) });
    const files = await failure(berth.grpc.writeFile({ sessionId: ws.sessionId, path: "d.txt", content: utf8("d") }));
    expect(files).toMatchObject({ code: "RESOURCE_EXHAUSTED", reason: "OVERLAY_QUOTA_EXCEEDED" });
    expect(files.metadata).toMatchObject({ quota: "BERTH_MAX_OVERLAY_FILES", limit: "3", used: "3", requested: "4" });
    // A deletion of a base file is a stored row (a tombstone): refused at the limit as well.
    expect(await failure(berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "README.md" }))).toMatchObject({ reason: "OVERLAY_QUOTA_EXCEEDED" });
    // Deleting an added file frees its row.
    await berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "b.txt" });
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "d.txt", content: utf8("d") });
    expect((await overlayRows(db, ws.workspaceId)).map((r) => r.path).sort()).toEqual(["a.txt", "c.txt", "d.txt"]);
    // Another workspace has its own quota.
    const other = (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: `quota-${++agents}` })).workspace!;
    await berth.grpc.writeFile({ sessionId: other.sessionId, path: "other.txt", content: utf8("x".repeat(100)) });
    expect(Number((await sql<{ n: string }>`SELECT count(*) AS n FROM overlay_files WHERE workspace_id = ${other.workspaceId}::uuid`.execute(db)).rows[0]!.n)).toBe(1);
  });
});

needs({ postgres: true })("overlay quota across instances", () => {
  let berth: TestBerth;
  let repoId: string;

  beforeAll(async () => {
    berth = await startBerth({ instances: 2, env: { BERTH_MAX_OVERLAY_FILES: "5", BERTH_MAX_OVERLAY_BYTES: "0" } });
    repoId = (await berth.grpc.registerRepository({ name: "quota-two", sourcePath: gitRepo().dir })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("the overlay quota holds when concurrent writes are spread over two instances", async () => {
    const ws = (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: "spread" })).workspace!;
    // Each instance's own clients: the writes race on both at once.
    const clients = berth.servers.map((s) => createClient(WorkspaceService, createConnectTransport({ baseUrl: s.httpUrl, httpVersion: "1.1" })));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => clients[i % 2]!.writeFile({ sessionId: ws.sessionId, path: `f${i}.txt`, content: utf8(`file ${i}`) })),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(5);
    for (const r of outcomes) {
      if (r.status === "fulfilled") continue;
      const f = rpcFailure(r.reason);
      expect(f).toMatchObject({ code: "RESOURCE_EXHAUSTED", reason: "OVERLAY_QUOTA_EXCEEDED" });
      expect(f.metadata).toMatchObject({ quota: "BERTH_MAX_OVERLAY_FILES", limit: "5", used: "5", workspace_id: ws.workspaceId });
    }
    expect(await overlayRows(berth.database.opened.db, ws.workspaceId)).toHaveLength(5);
  });
});
