/**
 * Authentication and authorisation through the real WorkspaceService: token auth with hashed
 * bearer tokens, and JWT (HS256). The principal's agent id is the caller's identity on every RPC.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };

describe("token auth", () => {
  let berth: TestBerth;
  const as = (who: keyof typeof TOKENS | "nobody" | "wrong") =>
    createGrpcClient(WorkspaceService, berth.server.grpcAddress, {
      metadata: who === "nobody" ? {} : { authorization: `Bearer ${who === "wrong" ? "not-a-token" : TOKENS[who]}` },
    });
  const turnsAs = (who: keyof typeof TOKENS) => createGrpcClient(TurnService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-auth-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        // Grants (issue 13): an agent entry without repos reaches no repository.
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.bob), agent_id: "bob", repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") } });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("refuses a call without a token, and with a wrong one, as UNAUTHENTICATED", async () => {
    expect(await failure(as("nobody").listRepositories({}))).toMatchObject({ code: "UNAUTHENTICATED", reason: "TOKEN_MISSING" });
    expect(await failure(as("wrong").listRepositories({}))).toMatchObject({ code: "UNAUTHENTICATED", reason: "TOKEN_INVALID" });
  });

  it("takes the agent id from the token, and refuses to act for another agent", async () => {
    const alice = as("alice");
    const { repository } = await alice.registerRepository({ name: "authed" });
    const { workspace } = await alice.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL });
    expect(workspace?.agentId).toBe("alice");

    expect(await failure(alice.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "bob" }))).toMatchObject({
      code: "PERMISSION_DENIED",
      reason: "AGENT_MISMATCH",
    });
    const bob = as("bob");
    expect(await failure(bob.getWorkspace({ sessionId: workspace!.sessionId }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "NOT_SESSION_OWNER" });
    expect(await failure(bob.destroyWorkspace({ sessionId: workspace!.sessionId }))).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(await failure(bob.transitionChangeset({ changesetId: workspace!.changesetId, toState: 7 }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "NOT_CHANGESET_OWNER" });

    // An admin may act for anyone.
    const ops = as("ops");
    expect((await ops.getWorkspace({ sessionId: workspace!.sessionId })).workspace?.agentId).toBe("alice");
    const forBob = await ops.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "bob" });
    expect(forBob.workspace?.agentId).toBe("bob");
  });

  it("refuses another agent on a resumed session, by its old id and its new one, on the workspace and the turn RPCs", async () => {
    const alice = as("alice");
    const aliceTurns = turnsAs("alice");
    const { repository } = await alice.registerRepository({ name: "authed-resume" });
    const { workspace } = await alice.createWorkspace({ repoId: repository!.id, mode: WorkspaceMode.PERSISTENT, baseCommit: "0000000000000000000000000000000000000000" });
    const old = workspace!.sessionId;
    const t1 = await aliceTurns.beginTurn({ sessionId: old });
    await alice.strandSession({ sessionId: old, reason: "test" });
    const { newSessionId } = await alice.resumeSession({ deadSessionId: old });
    const t2 = await aliceTurns.beginTurn({ sessionId: newSessionId });

    const bob = as("bob");
    const bobTurns = turnsAs("bob");
    /** The first message of a stream, or how it failed (a stream that stays open runs into the deadline). */
    const firstOf = (stream: AsyncIterable<unknown>) =>
      failure(
        (async () => {
          for await (const _ of stream) return;
        })(),
      );
    const denied = { code: "PERMISSION_DENIED", reason: "NOT_SESSION_OWNER" };
    // The turns of the old id first: their check once let anyone through on a resumed session.
    for (const turnId of [t1.turnId, t2.turnId]) {
      expect(await failure(bobTurns.turnHeartbeat({ turnId }))).toMatchObject(denied);
      expect(await failure(bobTurns.cancelTurn({ turnId }))).toMatchObject(denied);
      expect(await failure(bobTurns.endTurn({ turnId, outcome: TurnOutcome.COMPLETED }))).toMatchObject(denied);
    }
    for (const sessionId of [old, newSessionId]) {
      expect(await failure(bobTurns.listTurns({ sessionId }))).toMatchObject(denied);
      expect(await firstOf(bobTurns.watchTurns({ sessionId }, { deadlineMs: 2000 }))).toMatchObject(denied);
      expect(await failure(bobTurns.beginTurn({ sessionId }))).toMatchObject(denied);
      expect(await failure(bobTurns.getWorkspaceMap({ sessionId }))).toMatchObject(denied);
      // Not SESSION_RESUMED (which names the new id) nor the session's state: nothing before ownership.
      expect(await failure(bob.getWorkspace({ sessionId }))).toMatchObject(denied);
      expect(await failure(bob.heartbeat({ sessionId }))).toMatchObject(denied);
      expect(await failure(bob.strandSession({ sessionId }))).toMatchObject(denied);
      expect(await failure(bob.abandonSession({ sessionId }))).toMatchObject(denied);
      expect(await failure(bob.destroyWorkspace({ sessionId }))).toMatchObject(denied);
      expect(await failure(bob.readFile({ sessionId, path: "README.md" }))).toMatchObject(denied);
      expect(await firstOf(bob.attachSession({ sessionId }, { deadlineMs: 2000 }))).toMatchObject(denied);
    }

    // The owner still answers for the turns of the old id; its session answers SESSION_RESUMED.
    expect((await aliceTurns.listTurns({ sessionId: old })).turns.map((t) => t.turnId)).toEqual([t1.turnId]);
    expect((await aliceTurns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(false);
    expect(await failure(alice.getWorkspace({ sessionId: old }))).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_RESUMED", metadata: { new_session_id: newSessionId } });
    // An admin may look at anyone's.
    expect((await turnsAs("ops").listTurns({ sessionId: old })).turns.map((t) => t.turnId)).toEqual([t1.turnId]);
    expect((await aliceTurns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED })).turn?.turnId).toBe(t2.turnId);
    aliceTurns.close();
    bobTurns.close();
  });

  it("needs the admin role to register a repository with a source on the server's disk", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-src-"));
    execFileSync("git", ["init", "-q", dir]);
    expect(await failure(as("alice").registerRepository({ name: "src-alice", sourcePath: dir }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "ROLE_REQUIRED" });
    expect((await as("ops").registerRepository({ name: "src-ops", sourcePath: dir })).repository?.sourcePath).toBe(dir);
  });

  it("applies the same rules over Connect", async () => {
    const res = await fetch(`${berth.server.httpUrl}/berth.v1.WorkspaceService/ListRepositories`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    const ok = await fetch(`${berth.server.httpUrl}/berth.v1.WorkspaceService/ListRepositories`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKENS.alice}` },
      body: "{}",
    });
    expect(ok.status).toBe(200);
  });

  it("leaves health open", async () => {
    const res = await fetch(`${berth.server.httpUrl}/grpc.health.v1.Health/Check`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(await res.json()).toEqual({ status: "SERVING" });
  });
});

describe("jwt auth", () => {
  let berth: TestBerth;
  const secret = randomBytes(32).toString("hex");
  const sign = (sub: string, expSeconds = 60) =>
    new SignJWT({ roles: ["agent"], repos: ["*"] }).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setIssuedAt().setExpirationTime(Math.floor(Date.now() / 1000) + expSeconds).sign(new TextEncoder().encode(secret));

  beforeAll(async () => {
    berth = await startBerth({ env: { BERTH_AUTH: "jwt", BERTH_JWT_SECRET: secret } });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("takes the agent id from sub and refuses expired or foreign tokens", async () => {
    const carol = createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${await sign("carol")}` } });
    const { repository } = await carol.registerRepository({ name: "jwt" });
    const { workspace } = await carol.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL });
    expect(workspace?.agentId).toBe("carol");

    const expired = createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${await sign("carol", -120)}` } });
    expect(await failure(expired.listRepositories({}))).toMatchObject({ code: "UNAUTHENTICATED", reason: "TOKEN_EXPIRED" });
    const forged = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("carol").sign(new TextEncoder().encode("x".repeat(32)));
    const mallory = createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${forged}` } });
    expect(await failure(mallory.listRepositories({}))).toMatchObject({ code: "UNAUTHENTICATED", reason: "TOKEN_INVALID" });
  });
});
