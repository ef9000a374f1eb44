/**
 * BERTH_AUTH=jwt: `authorization: Bearer <JWT>` verified with jose, either HS256 with
 * BERTH_JWT_SECRET or against a local JSON Web Key Set file (BERTH_JWKS_FILE). Optional
 * BERTH_JWT_ISSUER / BERTH_JWT_AUDIENCE are enforced. The agent id is `sub`; roles come from
 * a `roles` claim (array of "agent" / "admin"; unknown roles ignored), default ["agent"]; the
 * repositories from a `repos` claim (names, ids or "*"; src/auth/grants.ts), default none.
 */
import { readFileSync } from "node:fs";
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyOptions, type JSONWebKeySet } from "jose";
import { ConfigError } from "../config.js";
import { unauthenticated } from "../platform/errors.js";
import { grantsOf, reposProblem } from "./grants.js";
import { bearerToken, isRole, principalOf, type Authenticator, type HeaderReader, type Principal, type Role } from "./principal.js";

export interface JwtOptions {
  readonly secret?: string | undefined;
  readonly jwksFile?: string | undefined;
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
}

export function jwtAuthenticator(opts: JwtOptions): Authenticator {
  const verifyOptions: JWTVerifyOptions = {};
  if (opts.issuer) verifyOptions.issuer = opts.issuer;
  if (opts.audience) verifyOptions.audience = opts.audience;
  let verify: (token: string) => ReturnType<typeof jwtVerify>;
  if (opts.secret) {
    const key = new TextEncoder().encode(opts.secret);
    const o = { ...verifyOptions, algorithms: ["HS256"] };
    verify = (token) => jwtVerify(token, key, o);
  } else if (opts.jwksFile) {
    let jwks: JSONWebKeySet;
    try {
      jwks = JSON.parse(readFileSync(opts.jwksFile, "utf8")) as JSONWebKeySet;
    } catch (e) {
      throw new ConfigError("BERTH_JWKS_FILE", `cannot read ${opts.jwksFile}: ${(e as Error).message}`);
    }
    let keys: ReturnType<typeof createLocalJWKSet>;
    try {
      keys = createLocalJWKSet(jwks);
    } catch (e) {
      throw new ConfigError("BERTH_JWKS_FILE", `not a JSON Web Key Set: ${(e as Error).message}`);
    }
    verify = (token) => jwtVerify(token, keys, verifyOptions);
  } else {
    throw new ConfigError("BERTH_JWT_SECRET", "BERTH_AUTH=jwt needs BERTH_JWT_SECRET or BERTH_JWKS_FILE");
  }

  return {
    async authenticate(header: HeaderReader): Promise<Principal> {
      const token = bearerToken(header("authorization"));
      if (token === undefined) throw unauthenticated("TOKEN_MISSING", "missing authorization: Bearer <token>");
      if (token === "") throw unauthenticated("TOKEN_INVALID", "malformed authorization header; expected Bearer <token>");
      let payload: Awaited<ReturnType<typeof jwtVerify>>["payload"];
      try {
        ({ payload } = await verify(token));
      } catch (e) {
        if (e instanceof joseErrors.JWTExpired) throw unauthenticated("TOKEN_EXPIRED", "token expired");
        throw unauthenticated("TOKEN_INVALID", "invalid token");
      }
      if (typeof payload.sub !== "string" || payload.sub === "") throw unauthenticated("TOKEN_INVALID", "token has no sub");
      const claim = (payload as { roles?: unknown }).roles;
      const roles: Role[] = Array.isArray(claim) ? claim.filter(isRole) : ["agent"];
      const repos = (payload as { repos?: unknown }).repos;
      if (repos !== undefined && reposProblem(repos) !== undefined) throw unauthenticated("TOKEN_INVALID", `the repos claim ${reposProblem(repos)}`);
      return principalOf(payload.sub, roles, grantsOf((repos ?? []) as string[]));
    },
  };
}
