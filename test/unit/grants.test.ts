/** Repository grants (issue 13): how token entries and JWT claims become grants, and what a grant covers. */
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import { eventForCaller, mayUseRepository, requireRepository, requireRepositoryName, seesRepository } from "../../src/api/authorize.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { covers, grantsOf, NO_REPOSITORIES } from "../../src/auth/grants.js";
import { ANONYMOUS_PRINCIPAL, principalOf } from "../../src/auth/principal.js";
import type { Config } from "../../src/config.js";
import { notFound } from "../../src/platform/errors.js";
import type { Repository } from "../../src/sessions/workspace.js";

const dir = mkdtempSync(path.join(tmpdir(), "berth-grants-"));
const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const SECRET = "g".repeat(40);
const ID = "3f2a9c1e-0b7d-4e59-9a61-5c0d8e2f4b17";
const REPO: Repository = { id: ID, name: "berth", sourcePath: "/srv/berth", remoteUrl: null, createdAt: 0, captureExclude: [], independentReview: false };
const catalogue = {
  repository: (id: string) => (id === ID ? Promise.resolve(REPO) : Promise.reject(notFound("REPOSITORY_NOT_FOUND", `repository ${id} is not registered`))),
};

function authConfig(over: Partial<Config["auth"]>): Config["auth"] {
  return { mode: "none", tokensFile: undefined, jwtSecret: undefined, jwksFile: undefined, jwtIssuer: undefined, jwtAudience: undefined, jwtMaxLifetimeSeconds: 86_400, jwtClockSkewSeconds: 30, ...over };
}

function tokensFile(tokens: unknown[]): string {
  const file = path.join(dir, `tokens-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ tokens }));
  return file;
}

describe("grants", () => {
  it("cover a repository by name, by id (any case) or with *", () => {
    expect(covers(grantsOf(["berth"]), REPO)).toBe(true);
    expect(covers(grantsOf([ID.toUpperCase()]), REPO)).toBe(true);
    expect(covers(grantsOf(["*"]), REPO)).toBe(true);
    expect(covers(grantsOf(["other", "Berth"]), REPO)).toBe(false);
    expect(covers(NO_REPOSITORIES, REPO)).toBe(false);
  });

  it("token file: repos becomes the principal's grants; an agent entry without repos reaches none and is named at start", async () => {
    const a = createAuthenticator(authConfig({
      mode: "token",
      tokensFile: tokensFile([
        { sha256: sha("t-granted"), agent_id: "granted", repos: ["berth"] },
        { sha256: sha("t-old"), agent_id: "old-entry" },
        { sha256: sha("t-admin"), agent_id: "ops", roles: ["admin"] },
      ]),
    }));
    expect(a.startupWarnings).toEqual([expect.stringMatching(/without "repos" reach no repository until granted: agent_id "old-entry" /)]);
    const granted = await a.authenticate((n) => (n === "authorization" ? "Bearer t-granted" : undefined));
    expect(covers(granted.repos, REPO)).toBe(true);
    const old = await a.authenticate((n) => (n === "authorization" ? "Bearer t-old" : undefined));
    expect(await mayUseRepository(catalogue, old, ID)).toBe(false);
    const admin = await a.authenticate((n) => (n === "authorization" ? "Bearer t-admin" : undefined));
    expect(await mayUseRepository(catalogue, admin, ID)).toBe(true);
  });

  it("token file: a repos that is not a list of names is a config error naming the entry", () => {
    for (const repos of ["berth", [""], [1]]) {
      expect(() => createAuthenticator(authConfig({ mode: "token", tokensFile: tokensFile([{ sha256: sha("x"), agent_id: "a", repos }]) }))).toThrow(/BERTH_AUTH_TOKENS_FILE.*tokens\[0\]\.repos/);
    }
  });

  it("jwt: the repos claim becomes the grants (none without it); a malformed claim is TOKEN_INVALID", async () => {
    const a = createAuthenticator(authConfig({ mode: "jwt", jwtSecret: SECRET }));
    const key = new TextEncoder().encode(SECRET);
    const sign = (claims: Record<string, unknown>) => new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setSubject("j").setExpirationTime("5m").sign(key);
    const header = (t: string) => (n: string) => (n === "authorization" ? `Bearer ${t}` : undefined);
    expect(covers((await a.authenticate(header(await sign({ repos: ["berth"] })))).repos, REPO)).toBe(true);
    expect((await a.authenticate(header(await sign({})))).repos).toBe(NO_REPOSITORIES);
    await expect(Promise.resolve().then(async () => a.authenticate(header(await sign({ repos: "berth" }))))).rejects.toMatchObject({ kind: "unauthenticated", reason: "TOKEN_INVALID" });
  });

  it("a repository not granted is refused naming it, whether or not it exists; with * an unknown one is left to the handler", async () => {
    const alice = principalOf("alice", ["agent"], grantsOf(["other"]));
    await expect(requireRepository(catalogue, alice, ID)).rejects.toMatchObject({ kind: "permission_denied", reason: "REPOSITORY_NOT_GRANTED", metadata: { repo_id: ID, agent_id: "alice" } });
    const unknown = "00000000-0000-4000-8000-000000000000";
    await expect(requireRepository(catalogue, alice, unknown)).rejects.toMatchObject({ reason: "REPOSITORY_NOT_GRANTED", metadata: { repo_id: unknown } });
    await expect(requireRepository(catalogue, principalOf("bob", ["agent"], grantsOf(["*"])), unknown)).resolves.toBeUndefined();
    expect(() => requireRepositoryName(alice, "berth")).toThrow(expect.objectContaining({ reason: "REPOSITORY_NOT_GRANTED", metadata: { name: "berth", agent_id: "alice" } }));
    expect(seesRepository(alice, REPO)).toBe(false);
    expect(seesRepository(ANONYMOUS_PRINCIPAL, REPO)).toBe(true);
  });

  it("env.evicted shows the environment's directory to admins only", () => {
    const event = create(EventSchema, { kind: "env.evicted", repoId: ID, payload: { case: "environmentEvicted", value: { environmentPath: "/var/berth/envs/x", reason: "idle-expiry" } } });
    const agent = principalOf("alice", ["agent"], grantsOf(["*"]));
    const seen = eventForCaller(agent, event);
    expect(seen.payload).toMatchObject({ case: "environmentEvicted", value: { environmentPath: "", reason: "idle-expiry" } });
    expect(eventForCaller(agent, event)).toBe(seen);
    expect(event.payload).toMatchObject({ value: { environmentPath: "/var/berth/envs/x" } });
    expect(eventForCaller(principalOf("ops", ["admin"]), event)).toBe(event);
    expect(eventForCaller(ANONYMOUS_PRINCIPAL, event)).toBe(event);
  });
});
