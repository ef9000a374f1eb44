/**
 * The JWT matrix (issue 13) through the real server, on both ports (gRPC and Connect): every
 * kind of bad token is UNAUTHENTICATED with its reason and the claim (or algorithm) it is
 * refused for, a valid one is accepted; and a JWKS file rotated under a running server takes
 * effect without a restart (old key refused, new key accepted).
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { exportJWK, SignJWT, UnsecuredJWT, type JWTPayload } from "jose";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { rpcFailure, type RpcFailure } from "../support/rpc-error.js";

const ISSUER = "https://issuer.example";
const AUDIENCE = "berth-test";
const MAX_LIFETIME_S = 3600;
const now = () => Math.floor(Date.now() / 1000);

/** Both ports of one server: the same token through gRPC and through Connect. */
function ports(berth: TestBerth) {
  const grpc = createGrpcClient(WorkspaceService, berth.server.grpcAddress);
  const connect: Client<typeof WorkspaceService> = createClient(WorkspaceService, createConnectTransport({ baseUrl: berth.server.httpUrl, httpVersion: "1.1" }));
  return {
    close: () => grpc.close(),
    /** The outcome on each port: "OK" or the failure. */
    async outcomes(token: string): Promise<{ grpc: RpcFailure | "OK"; connect: RpcFailure | "OK" }> {
      const authorization = `Bearer ${token}`;
      const run = async (call: Promise<unknown>): Promise<RpcFailure | "OK"> => {
        try {
          await call;
          return "OK";
        } catch (err) {
          return rpcFailure(err);
        }
      };
      return {
        grpc: await run(grpc.listRepositories({}, { metadata: { authorization } })),
        connect: await run(connect.listRepositories({}, { headers: { authorization } })),
      };
    },
  };
}

type Expected = "OK" | { reason: string; claim?: string; alg?: string };

function expectBoth(got: { grpc: RpcFailure | "OK"; connect: RpcFailure | "OK" }, want: Expected, row: string): void {
  for (const [port, outcome] of Object.entries(got)) {
    const where = `${row} (${port})`;
    if (want === "OK") {
      expect(outcome, where).toBe("OK");
      continue;
    }
    expect(outcome, where).not.toBe("OK");
    const f = outcome as RpcFailure;
    expect({ code: f.code, reason: f.reason }, where).toEqual({ code: "UNAUTHENTICATED", reason: want.reason });
    if (want.claim !== undefined) expect(f.metadata.claim, where).toBe(want.claim);
    if (want.alg !== undefined) expect(f.metadata.alg, where).toBe(want.alg);
    expect(f.message.length, where).toBeGreaterThan(0);
  }
}

describe("JWT matrix, shared secret (HS256) with issuer and audience", () => {
  let berth: TestBerth;
  let both: ReturnType<typeof ports>;
  const secret = randomBytes(32).toString("hex");
  const key = new TextEncoder().encode(secret);
  /** A token with every claim right unless `over` says otherwise (undefined removes a claim). */
  const token = (over: Partial<Record<keyof JWTPayload, unknown>> = {}, alg = "HS256", signingKey: Uint8Array = key) => {
    const claims: Record<string, unknown> = { sub: "carol", iss: ISSUER, aud: AUDIENCE, iat: now(), exp: now() + 300, roles: ["agent"], ...over };
    for (const k of Object.keys(claims)) if (claims[k] === undefined) delete claims[k];
    return new SignJWT(claims).setProtectedHeader({ alg }).sign(signingKey);
  };

  beforeAll(async () => {
    berth = await startBerth({
      env: { BERTH_AUTH: "jwt", BERTH_JWT_SECRET: secret, BERTH_JWT_ISSUER: ISSUER, BERTH_JWT_AUDIENCE: AUDIENCE, BERTH_JWT_MAX_LIFETIME_S: String(MAX_LIFETIME_S), BERTH_JWT_CLOCK_SKEW_S: "30" },
    });
    both = ports(berth);
  });
  afterAll(async () => {
    both?.close();
    await berth?.close();
  });

  it.each<[string, () => Promise<string> | string, Expected]>([
    ["valid", () => token(), "OK"],
    ["valid without iat (lifetime counted from now)", () => token({ iat: undefined }), "OK"],
    ["nbf within the clock skew", () => token({ nbf: now() + 10 }), "OK"],
    ["no exp", () => token({ exp: undefined }), { reason: "TOKEN_INVALID", claim: "exp" }],
    ["expired", () => token({ iat: now() - 600, exp: now() - 120 }), { reason: "TOKEN_EXPIRED", claim: "exp" }],
    ["not yet valid (nbf)", () => token({ nbf: now() + 300, exp: now() + 600 }), { reason: "TOKEN_NOT_YET_VALID", claim: "nbf" }],
    ["issued in the future (iat)", () => token({ iat: now() + 600, exp: now() + 900 }), { reason: "TOKEN_INVALID", claim: "iat" }],
    ["wrong iss", () => token({ iss: "https://elsewhere.example" }), { reason: "TOKEN_INVALID", claim: "iss" }],
    ["no iss", () => token({ iss: undefined }), { reason: "TOKEN_INVALID", claim: "iss" }],
    ["wrong aud", () => token({ aud: "someone-else" }), { reason: "TOKEN_INVALID", claim: "aud" }],
    ["lifetime above the maximum", () => token({ exp: now() + MAX_LIFETIME_S + 60 }), { reason: "TOKEN_INVALID", claim: "exp" }],
    ["lifetime above the maximum, no iat", () => token({ iat: undefined, exp: now() + MAX_LIFETIME_S + 60 }), { reason: "TOKEN_INVALID", claim: "exp" }],
    ["no sub", () => token({ sub: undefined }), { reason: "TOKEN_INVALID", claim: "sub" }],
    ["alg none", () => new UnsecuredJWT({ iss: ISSUER, aud: AUDIENCE, roles: ["agent"] }).setSubject("carol").setIssuedAt().setExpirationTime("5m").encode(), { reason: "TOKEN_INVALID", alg: "none" }],
    ["alg HS512 (not allowed) with the right secret", () => token({}, "HS512"), { reason: "TOKEN_INVALID", alg: "HS512" }],
    ["signed with another secret", () => token({}, "HS256", new TextEncoder().encode("w".repeat(40))), { reason: "TOKEN_INVALID" }],
    ["not a JWT", () => "not.a.jwt", { reason: "TOKEN_INVALID" }],
  ])("%s", async (row, make, want) => {
    expectBoth(await both.outcomes(await make()), want, row);
  });
});

describe("JWT matrix, JWKS file (asymmetric keys)", () => {
  let berth: TestBerth;
  let both: ReturnType<typeof ports>;
  let jwksFile: string;
  const k1 = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const k2 = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const jwk = async (publicKey: KeyObject, kid: string, alg: string) => ({ ...(await exportJWK(publicKey)), kid, alg, use: "sig" });
  const sign = (privateKey: KeyObject | Uint8Array, kid: string, alg: string) =>
    new SignJWT({ roles: ["agent"] }).setProtectedHeader({ alg, kid }).setSubject("dave").setIssuedAt().setExpirationTime("5m").sign(privateKey);
  /** Replaces the key set the way a rotation should: write aside, rename over. */
  const rotate = (keys: unknown[]) => {
    const tmp = `${jwksFile}.tmp`;
    writeFileSync(tmp, JSON.stringify({ keys }));
    renameSync(tmp, jwksFile);
  };

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-jwks-"));
    jwksFile = path.join(dir, "jwks.json");
    writeFileSync(jwksFile, JSON.stringify({ keys: [await jwk(k1.publicKey, "k1", "RS256")] }));
    berth = await startBerth({ env: { BERTH_AUTH: "jwt", BERTH_JWKS_FILE: jwksFile } });
    both = ports(berth);
  });
  afterAll(async () => {
    both?.close();
    await berth?.close();
  });

  it("accepts RS256 from the key set; refuses HS256 signed with the RSA public key (algorithm confusion) and none", async () => {
    expectBoth(await both.outcomes(await sign(k1.privateKey, "k1", "RS256")), "OK", "RS256 k1");
    const publicPem = new TextEncoder().encode(k1.publicKey.export({ type: "spki", format: "pem" }).toString());
    expectBoth(await both.outcomes(await sign(publicPem, "k1", "HS256")), { reason: "TOKEN_INVALID", alg: "HS256" }, "HS256 with the public key as secret");
    const none = new UnsecuredJWT({ roles: ["admin"] }).setSubject("dave").setIssuedAt().setExpirationTime("5m").encode();
    expectBoth(await both.outcomes(none), { reason: "TOKEN_INVALID", alg: "none" }, "alg none");
    expectBoth(await both.outcomes(await sign(k2.privateKey, "k2", "ES256")), { reason: "TOKEN_INVALID" }, "ES256 k2 before the rotation");
  });

  it("a rotated key file takes effect without a restart: new-key tokens accepted, old-key tokens refused", async () => {
    const oldToken = await sign(k1.privateKey, "k1", "RS256");
    expectBoth(await both.outcomes(oldToken), "OK", "k1 before the rotation");
    rotate([await jwk(k2.publicKey, "k2", "ES256")]);
    // A token naming a key the set does not hold makes the server look at the file at once.
    expectBoth(await both.outcomes(await sign(k2.privateKey, "k2", "ES256")), "OK", "k2 after the rotation");
    await vi.waitFor(async () => expectBoth(await both.outcomes(oldToken), { reason: "TOKEN_INVALID" }, "k1 after the rotation"), { timeout: 5000, interval: 50 });

    // Rotating back (and a key set written in place, not renamed) works the same way.
    writeFileSync(jwksFile, JSON.stringify({ keys: [await jwk(k1.publicKey, "k1", "RS256")] }));
    await vi.waitFor(async () => expectBoth(await both.outcomes(await sign(k2.privateKey, "k2", "ES256")), { reason: "TOKEN_INVALID" }, "k2 after rotating back"), { timeout: 5000, interval: 50 });
    expectBoth(await both.outcomes(oldToken), "OK", "k1 after rotating back");
  });

  it("a key file that does not parse leaves the previous keys in force", async () => {
    writeFileSync(jwksFile, "{ not json");
    const valid = await sign(k1.privateKey, "k1", "RS256");
    // Calls keep being accepted while and after the server looked at the broken file (it logs a warning).
    await vi.waitFor(async () => {
      expectBoth(await both.outcomes(valid), "OK", "k1 with a broken file");
      expect(berth.logs.some((l) => String(l.msg).includes("cannot reload BERTH_JWKS_FILE"))).toBe(true);
    }, { timeout: 5000, interval: 50 });
    expectBoth(await both.outcomes(valid), "OK", "k1 after the broken file was seen");
    writeFileSync(jwksFile, JSON.stringify({ keys: [await jwk(k1.publicKey, "k1", "RS256")] }));
  });
});
