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
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
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

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-auth-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"] },
        { sha256: sha(TOKENS.bob), agent_id: "bob" },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
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
    new SignJWT({ roles: ["agent"] }).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setIssuedAt().setExpirationTime(Math.floor(Date.now() / 1000) + expSeconds).sign(new TextEncoder().encode(secret));

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
