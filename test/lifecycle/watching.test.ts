/**
 * Watching is not activity (issue 29): only a session's own agent keeps it connected. An admin
 * reading it, or any call marked `berth-observer: 1` (the console's, which with auth off is the
 * same anonymous principal as every agent), never renews its lease, so a session whose agent
 * stopped strands on time while others keep looking at it. Real servers, real PostgreSQL (or
 * PGlite), calls through grpc-js; the row is read with SQL while waiting.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient, GrpcCallError } from "../support/grpc-client.js";

const LEASE_MS = 1500;
const GC_MS = 200;
/** Lease, a GC period, an activity flush (at most 2 s) and scheduling on a loaded machine. */
const STRANDED_WITHIN_MS = LEASE_MS + GC_MS + 2000 + 3000;
const ENV = { BERTH_SESSION_LEASE_MS: String(LEASE_MS), BERTH_GC_INTERVAL_MS: String(GC_MS) };
const OBSERVER = { "berth-observer": "1" };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A call that needs an active session may meet the strand it waits for: that answer, and only it, is fine. */
async function active<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof GrpcCallError && err.errorInfo?.reason === "SESSION_STRANDED") return undefined;
    throw err;
  }
}

async function lifecycleOf(berth: TestBerth, sessionId: string): Promise<string | undefined> {
  const r = await sql<{ lifecycle: string }>`SELECT lifecycle FROM workspaces WHERE session_id = ${sessionId}::uuid`.execute(berth.database.opened.db);
  return r.rows[0]?.lifecycle;
}

/**
 * Calls `watch` every 100 ms from `since` until the row says the session is no longer active;
 * returns how long after `since` that was. Every watch call must succeed while it lasts.
 */
async function watchUntilStranded(berth: TestBerth, sessionId: string, since: number, watch: () => Promise<unknown>): Promise<{ after: number; calls: number }> {
  let calls = 0;
  for (;;) {
    if ((await lifecycleOf(berth, sessionId)) !== "active") return { after: Date.now() - since, calls };
    if (Date.now() - since > STRANDED_WITHIN_MS) throw new Error(`still active ${STRANDED_WITHIN_MS} ms after its agent's last call, watched ${calls} times`);
    await watch();
    calls++;
    await sleep(100);
  }
}

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };

describe("watching is not activity, auth on: the session's agent alone renews its lease", () => {
  let berth: TestBerth;
  let repoId: string;
  const as = (who: keyof typeof TOKENS, extra: Record<string, string> = {}) =>
    createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}`, ...extra } });

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-watch-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ env: { ...ENV, BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
    repoId = (await as("ops").registerRepository({ name: "watched" })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("a session whose agent stopped strands on time while an admin and the agent's own observer-marked calls keep reading it", async () => {
    const alice = as("alice");
    const ops = as("ops");
    const aliceWatching = as("alice", OBSERVER);
    const { workspace } = await alice.createWorkspace({ repoId, baseCommit: "abc123", mode: WorkspaceMode.EPHEMERAL });
    const sessionId = workspace!.sessionId;
    // The agent's last activity: from here its lease runs.
    await alice.heartbeat({ sessionId });
    const last = Date.now();
    const seen = await watchUntilStranded(berth, sessionId, last, async () => {
      // Every way of looking at it: GetWorkspace, Heartbeat (answered, not renewed), ListClaims.
      expect((await ops.getWorkspace({ sessionId })).workspace?.agentId).toBe("alice");
      const beat = await active(ops.heartbeat({ sessionId }));
      if (beat) expect(beat.leaseMs).toBe(LEASE_MS);
      await ops.listClaims({ sessionId });
      await aliceWatching.getWorkspace({ sessionId });
      await active(aliceWatching.heartbeat({ sessionId }));
    });
    expect(seen.calls).toBeGreaterThan(3);
    expect(seen.after).toBeGreaterThanOrEqual(LEASE_MS);
    expect((await ops.getWorkspace({ sessionId })).workspace?.lifecycleState).toBe(LifecycleState.STRANDED);
  });

  it("the agent's own calls keep it connected past the lease", async () => {
    const alice = as("alice");
    const { workspace } = await alice.createWorkspace({ repoId, baseCommit: "abc123", mode: WorkspaceMode.EPHEMERAL });
    const sessionId = workspace!.sessionId;
    const until = Date.now() + LEASE_MS * 3;
    while (Date.now() < until) {
      await alice.getWorkspace({ sessionId });
      expect(await lifecycleOf(berth, sessionId)).toBe("active");
      await sleep(LEASE_MS / 4);
    }
  });
});

describe("watching is not activity, auth off: the console's berth-observer calls never renew", () => {
  let berth: TestBerth;
  let repoId: string;
  const client = (extra: Record<string, string> = {}) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: extra });

  beforeAll(async () => {
    berth = await startBerth({ env: ENV });
    repoId = (await berth.grpc.registerRepository({ name: "watched-anon" })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("an observer-marked caller reads a session whose agent stopped until it strands", async () => {
    const { workspace } = await berth.grpc.createWorkspace({ repoId, baseCommit: "abc123", mode: WorkspaceMode.EPHEMERAL, agentId: "agent-a" });
    const sessionId = workspace!.sessionId;
    const last = Date.now();
    const observer = client(OBSERVER);
    const seen = await watchUntilStranded(berth, sessionId, last, async () => {
      await observer.getWorkspace({ sessionId });
      await active(observer.heartbeat({ sessionId }));
    });
    expect(seen.calls).toBeGreaterThan(3);
    expect(seen.after).toBeGreaterThanOrEqual(LEASE_MS);
  });

  it("an unmarked call is the agent's (one anonymous principal) and keeps the session connected", async () => {
    const { workspace } = await berth.grpc.createWorkspace({ repoId, baseCommit: "abc123", mode: WorkspaceMode.EPHEMERAL, agentId: "agent-b" });
    const sessionId = workspace!.sessionId;
    const agent = client();
    const until = Date.now() + LEASE_MS * 3;
    while (Date.now() < until) {
      await agent.getWorkspace({ sessionId });
      expect(await lifecycleOf(berth, sessionId)).toBe("active");
      await sleep(LEASE_MS / 4);
    }
  });
});
