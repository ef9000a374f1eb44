import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createHash, generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { SignJWT, exportJWK } from "jose";
import { Code, type ConnectError } from "@connectrpc/connect";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { JWKS_CHECK_MS, jwtAuthenticator } from "../../src/auth/jwt.js";
import { effectiveAgentId, requireRole } from "../../src/api/authorize.js";
import { ANONYMOUS_PRINCIPAL, principalOf } from "../../src/auth/principal.js";
import { BerthError } from "../../src/platform/errors.js";
import type { Config } from "../../src/config.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import * as reflV1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { createGrpcClient, GrpcCallError } from "../support/grpc-client.js";
import { startHarness, type Harness } from "./harness.js";

const dir = mkdtempSync(path.join(tmpdir(), "berth-auth-"));
const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const SECRET = "s".repeat(40);

function authConfig(over: Partial<Config["auth"]>): Config["auth"] {
  return { mode: "none", tokensFile: undefined, jwtSecret: undefined, jwksFile: undefined, jwtIssuer: undefined, jwtAudience: undefined, jwtMaxLifetimeSeconds: 86_400, jwtClockSkewSeconds: 30, ...over };
}

function hdr(h: Record<string, string>) {
  return (n: string) => h[n];
}

async function rejection(p: () => unknown): Promise<BerthError> {
  try {
    await p();
  } catch (e) {
    expect(e).toBeInstanceOf(BerthError);
    return e as BerthError;
  }
  throw new Error("expected a rejection");
}

async function grpcErr(p: Promise<unknown>): Promise<GrpcCallError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(GrpcCallError);
  return e as GrpcCallError;
}

describe("authenticators", () => {
  it("none: anonymous principal with both roles", () => {
    const a = createAuthenticator(authConfig({}));
    const p = a.authenticate(hdr({})) as ReturnType<typeof principalOf>;
    expect(p.anonymous).toBe(true);
    expect(p.agentId).toBeUndefined();
    expect([...p.roles].sort()).toEqual(["admin", "agent"]);
  });

  it("token: missing, malformed, wrong, valid", async () => {
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({ tokens: [{ sha256: sha("tok-a"), agent_id: "agent-a", roles: ["agent"] }, { sha256: sha("tok-admin"), agent_id: "ops", roles: ["agent", "admin"] }] }));
    const a = createAuthenticator(authConfig({ mode: "token", tokensFile: file }));
    expect((await rejection(() => a.authenticate(hdr({})))).reason).toBe("TOKEN_MISSING");
    expect((await rejection(() => a.authenticate(hdr({ authorization: "Basic abc" })))).reason).toBe("TOKEN_INVALID");
    expect((await rejection(() => a.authenticate(hdr({ authorization: "Bearer nope" })))).reason).toBe("TOKEN_INVALID");
    const p = await a.authenticate(hdr({ authorization: "Bearer tok-a" }));
    expect(p.agentId).toBe("agent-a");
    expect([...p.roles]).toEqual(["agent"]);
    expect((await a.authenticate(hdr({ authorization: "bearer tok-admin" }))).roles.has("admin")).toBe(true);
  });

  it("token: a bad file is a config error", () => {
    const file = path.join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ tokens: [{ sha256: "xyz", agent_id: "a" }] }));
    expect(() => createAuthenticator(authConfig({ mode: "token", tokensFile: file }))).toThrow(/BERTH_AUTH_TOKENS_FILE/);
  });

  it("jwt HS256: valid, roles claim, issuer/audience, expired, wrong key", async () => {
    const a = createAuthenticator(authConfig({ mode: "jwt", jwtSecret: SECRET, jwtIssuer: "iss", jwtAudience: "aud" }));
    const key = new TextEncoder().encode(SECRET);
    const good = await new SignJWT({ roles: ["agent", "admin", "bogus"] }).setProtectedHeader({ alg: "HS256" }).setSubject("agent-j").setIssuer("iss").setAudience("aud").setExpirationTime("5m").sign(key);
    const p = await a.authenticate(hdr({ authorization: `Bearer ${good}` }));
    expect(p.agentId).toBe("agent-j");
    expect([...p.roles].sort()).toEqual(["admin", "agent"]);
    const noRoles = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("x").setIssuer("iss").setAudience("aud").setExpirationTime("5m").sign(key);
    expect([...(await a.authenticate(hdr({ authorization: `Bearer ${noRoles}` }))).roles]).toEqual(["agent"]);
    const expired = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("x").setIssuer("iss").setAudience("aud").setExpirationTime(Math.floor(Date.now() / 1000) - 120).sign(key);
    expect((await rejection(() => a.authenticate(hdr({ authorization: `Bearer ${expired}` })))).reason).toBe("TOKEN_EXPIRED");
    const wrongIss = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("x").setIssuer("other").setAudience("aud").setExpirationTime("5m").sign(key);
    expect((await rejection(() => a.authenticate(hdr({ authorization: `Bearer ${wrongIss}` })))).reason).toBe("TOKEN_INVALID");
    const wrongKey = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("x").setIssuer("iss").setAudience("aud").setExpirationTime("5m").sign(new TextEncoder().encode("t".repeat(40)));
    expect((await rejection(() => a.authenticate(hdr({ authorization: `Bearer ${wrongKey}` })))).reason).toBe("TOKEN_INVALID");
    expect((await rejection(() => a.authenticate(hdr({ authorization: "Bearer not.a.jwt" })))).reason).toBe("TOKEN_INVALID");
    expect((await rejection(() => a.authenticate(hdr({})))).reason).toBe("TOKEN_MISSING");
  });

  it("jwt JWKS file (RS256)", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    const file = path.join(dir, "jwks.json");
    writeFileSync(file, JSON.stringify({ keys: [jwk] }));
    const a = createAuthenticator(authConfig({ mode: "jwt", jwksFile: file }));
    const t = await new SignJWT({ roles: ["admin"] }).setProtectedHeader({ alg: "RS256", kid: "k1" }).setSubject("agent-r").setExpirationTime("5m").sign(privateKey);
    const p = await a.authenticate(hdr({ authorization: `Bearer ${t}` }));
    expect(p.agentId).toBe("agent-r");
    expect([...p.roles]).toEqual(["admin"]);
  });

  it("jwt JWKS file: without change notifications, the once-a-second stat picks up a rotation", async () => {
    const k1 = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const k2 = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const file = path.join(dir, "jwks-poll.json");
    const publish = async (key: typeof k1.publicKey) => writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(key)), kid: "k", alg: "RS256", use: "sig" }] }));
    await publish(k1.publicKey);
    const a = jwtAuthenticator({ jwksFile: file, maxLifetimeSeconds: 3600, clockSkewSeconds: 0, watchJwks: false });
    try {
      const sign = (key: typeof k1.privateKey) => new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "k" }).setSubject("agent-r").setExpirationTime("5m").sign(key);
      const old = await sign(k1.privateKey);
      expect((await a.authenticate(hdr({ authorization: `Bearer ${old}` }))).agentId).toBe("agent-r");
      await publish(k2.publicKey);
      // Only old-key tokens are sent, which the cached keys accept: nothing but the periodic look at the file can refuse them.
      await vi.waitFor(async () => expect((await rejection(() => a.authenticate(hdr({ authorization: `Bearer ${old}` })))).reason).toBe("TOKEN_INVALID"), { timeout: JWKS_CHECK_MS * 5, interval: 100 });
      expect((await a.authenticate(hdr({ authorization: `Bearer ${await sign(k2.privateKey)}` }))).agentId).toBe("agent-r");
    } finally {
      a.close?.();
    }
  });
});

describe("authorize", () => {
  const agentA = principalOf("agent-a", ["agent"]);
  const admin = principalOf("ops", ["agent", "admin"]);
  it("effectiveAgentId", () => {
    expect(effectiveAgentId(ANONYMOUS_PRINCIPAL, "x", "agent_id")).toBe("x");
    const e = (() => {
      try {
        effectiveAgentId(ANONYMOUS_PRINCIPAL, "", "agent_id");
      } catch (x) {
        return x as BerthError;
      }
    })();
    expect(e?.kind).toBe("invalid_argument");
    expect(e?.violations[0]).toMatchObject({ field: "agent_id", reason: "REQUIRED" });
    expect(effectiveAgentId(agentA, "", "agent_id")).toBe("agent-a");
    expect(effectiveAgentId(agentA, "agent-a", "agent_id")).toBe("agent-a");
    expect(() => effectiveAgentId(agentA, "agent-b", "agent_id")).toThrow(expect.objectContaining({ kind: "permission_denied", reason: "AGENT_MISMATCH" }));
    expect(effectiveAgentId(admin, "agent-b", "agent_id")).toBe("agent-b");
  });
  it("requireRole", () => {
    expect(() => requireRole(agentA, "admin")).toThrow(expect.objectContaining({ kind: "permission_denied", reason: "ROLE_REQUIRED" }));
    expect(() => requireRole(admin, "admin")).not.toThrow();
    expect(() => requireRole(ANONYMOUS_PRINCIPAL, "admin")).not.toThrow();
  });
});

describe("auth over the transports (token)", () => {
  let h: Harness;
  beforeAll(async () => {
    const file = path.join(dir, "tokens2.json");
    writeFileSync(file, JSON.stringify({ tokens: [{ sha256: sha("tok-a"), agent_id: "agent-a", roles: ["agent"] }] }));
    h = await startHarness({ authenticator: createAuthenticator(authConfig({ mode: "token", tokensFile: file })) });
  });
  afterAll(async () => {
    await h.close();
  });

  it("grpc: no token / wrong token → UNAUTHENTICATED; valid token → principal reaches the handler", async () => {
    const none = await grpcErr(h.grpcClient().getWorkspace({ sessionId: "s" }));
    expect(none.codeName).toBe("UNAUTHENTICATED");
    expect(none.errorInfo?.reason).toBe("TOKEN_MISSING");
    const wrong = await grpcErr(h.grpcClient({ metadata: { authorization: "Bearer nope" } }).getWorkspace({ sessionId: "s" }));
    expect(wrong.codeName).toBe("UNAUTHENTICATED");
    expect(wrong.errorInfo?.reason).toBe("TOKEN_INVALID");
    const res = await h.grpcClient({ metadata: { authorization: "Bearer tok-a" } }).getWorkspace({ sessionId: "s" });
    expect(res.workspace?.agentId).toBe("agent-a");
    expect(h.probe.principals.at(-1)?.agentId).toBe("agent-a");
  });

  it("connect: same", async () => {
    const e = (await h.connect("1.1").getWorkspace({ sessionId: "s" }).catch((x: unknown) => x)) as ConnectError;
    expect(e.code).toBe(Code.Unauthenticated);
    expect(e.findDetails(ErrorInfoSchema)[0]?.reason).toBe("TOKEN_MISSING");
    const ok = await h.connect("1.1", { authorization: "Bearer tok-a" }).getWorkspace({ sessionId: "s" });
    expect(ok.workspace?.agentId).toBe("agent-a");
  });

  it("health is exempt, reflection is not", async () => {
    const health = createGrpcClient(Health, h.grpcAddress);
    const refl = createGrpcClient(reflV1.ServerReflection, h.grpcAddress);
    try {
      expect((await health.check({})).status).toBe(1);
      const err = await (async () => {
        for await (const _ of refl.serverReflectionInfo([{ messageRequest: { case: "listServices", value: "" } }])) void _;
      })().catch((x: unknown) => x);
      expect((err as GrpcCallError).codeName).toBe("UNAUTHENTICATED");
    } finally {
      health.close();
      refl.close();
    }
  });
});

describe("auth over the transports (jwt)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ authenticator: createAuthenticator(authConfig({ mode: "jwt", jwtSecret: SECRET })) });
  });
  afterAll(async () => {
    await h.close();
  });
  it("valid JWT principal reaches the handler; a bad one is UNAUTHENTICATED", async () => {
    const t = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("agent-j").setExpirationTime("5m").sign(new TextEncoder().encode(SECRET));
    const res = await h.grpcClient({ metadata: { authorization: `Bearer ${t}` } }).getWorkspace({ sessionId: "j" });
    expect(res.workspace?.agentId).toBe("agent-j");
    const e = await grpcErr(h.grpcClient({ metadata: { authorization: "Bearer x.y.z" } }).getWorkspace({ sessionId: "j" }));
    expect(e.codeName).toBe("UNAUTHENTICATED");
    const ok = await h.connect("2", { authorization: `Bearer ${t}` }).getWorkspace({ sessionId: "j" });
    expect(ok.workspace?.agentId).toBe("agent-j");
  });
});
