/**
 * BERTH_AUTH=jwt: `authorization: Bearer <JWT>` verified with jose, either HS256 with
 * BERTH_JWT_SECRET or against a local JSON Web Key Set file (BERTH_JWKS_FILE), re-read when it
 * changes. The agent id is `sub`; roles come from a `roles` claim (array of "agent" / "admin" / "reviewer";
 * unknown roles ignored), default ["agent"]; the repositories from a `repos` claim (names, ids or
 * "*"; src/auth/grants.ts), default none.
 *
 * What a token must be (docs/security.md#tokens-jwt):
 * - signed with an allowed algorithm: HS256 with a secret; an asymmetric one (RS*, PS*, ES*,
 *   EdDSA) with a JWKS file. `none`, and a symmetric algorithm against the key set (an RSA public
 *   key used as an HMAC secret), are refused before any key is looked at;
 * - `exp` present and at most BERTH_JWT_MAX_LIFETIME_S after `iat` (after now, without `iat`):
 *   a leaked token stops working by itself;
 * - `nbf` and `exp` honoured with BERTH_JWT_CLOCK_SKEW_S of leeway; `iat` not in the future;
 * - `iss` / `aud` equal to BERTH_JWT_ISSUER / BERTH_JWT_AUDIENCE when those are set.
 * Refusals are UNAUTHENTICATED: TOKEN_EXPIRED, TOKEN_NOT_YET_VALID, or TOKEN_INVALID with
 * metadata `claim` (or `alg`) naming what is wrong. A claim is only judged on a token whose
 * signature held (jose checks the signature first), so the message tells a forger nothing.
 */
import { readFileSync, statSync, watch, type FSWatcher } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import {
  createLocalJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from "jose";
import { ConfigError } from "../config.js";
import { unauthenticated, type BerthError } from "../platform/errors.js";
import { grantsOf, reposProblem } from "./grants.js";
import { bearerToken, isRole, principalOf, type Authenticator, type HeaderReader, type Principal, type Role } from "./principal.js";

/** The algorithms accepted with a shared secret. */
export const SECRET_ALGORITHMS: readonly string[] = ["HS256"];
/** The algorithms accepted against a key set: asymmetric only, so a public key can never serve as an HMAC secret. */
export const JWKS_ALGORITHMS: readonly string[] = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

/** How often the JWKS file is looked at (one stat) when no change notification came. */
export const JWKS_CHECK_MS = 1000;

export interface JwtOptions {
  readonly secret?: string | undefined;
  readonly jwksFile?: string | undefined;
  readonly issuer?: string | undefined;
  readonly audience?: string | undefined;
  /** BERTH_JWT_MAX_LIFETIME_S */
  readonly maxLifetimeSeconds: number;
  /** BERTH_JWT_CLOCK_SKEW_S */
  readonly clockSkewSeconds: number;
  /** Told when a changed JWKS file cannot be used (the previous keys stay in force). */
  readonly onWarning?: (message: string, err: unknown) => void;
  /** Watch the JWKS file's directory for changes (default true); false leaves the once-a-second stat alone, as where notifications never arrive. */
  readonly watchJwks?: boolean;
}

/**
 * The key set of BERTH_JWKS_FILE, current: a change notification of the file's directory (a
 * rotation by rename replaces the file's inode, which a watch of the file itself would miss) or,
 * as the fallback where notifications do not arrive (network file systems), a stat at most every
 * JWKS_CHECK_MS reloads it. A token naming a key the set does not hold looks at once. A file
 * that does not parse (caught mid-write) leaves the previous keys in force and is read again
 * at the next look.
 */
class JwksFile {
  private keys: JWTVerifyGetKey;
  private version: string;
  private checkedAt = Date.now();
  private dirty = false;
  private checking: Promise<void> | undefined = undefined;
  private readonly watcher: FSWatcher | undefined;

  constructor(
    private readonly file: string,
    private readonly onWarning: (message: string, err: unknown) => void,
    watchDirectory: boolean,
  ) {
    let text: string;
    try {
      this.version = versionOf(statSync(file));
      text = readFileSync(file, "utf8");
    } catch (e) {
      throw new ConfigError("BERTH_JWKS_FILE", `cannot read ${file}: ${(e as Error).message}`);
    }
    try {
      this.keys = keySet(text);
    } catch (e) {
      throw new ConfigError("BERTH_JWKS_FILE", `not a JSON Web Key Set: ${(e as Error).message}`);
    }
    if (!watchDirectory) return;
    try {
      const name = path.basename(file);
      this.watcher = watch(path.dirname(file), { persistent: false }, (_event, changed) => {
        if (changed === null || changed === name) this.dirty = true;
      });
      this.watcher.on("error", (err) => {
        // The stat fallback keeps rotation working without notifications.
        this.onWarning("JWKS file watch failed; falling back to a stat every second", err);
        this.watcher?.close();
      });
    } catch (err) {
      this.onWarning("cannot watch the JWKS file's directory; falling back to a stat every second", err);
    }
  }

  /** The key set, looked at again first when it may have changed. */
  async current(): Promise<JWTVerifyGetKey> {
    if (this.dirty || Date.now() - this.checkedAt >= JWKS_CHECK_MS) await this.check();
    return this.keys;
  }

  /** Looks at the file now (a token named a key we do not hold); true when the keys changed. */
  async recheck(): Promise<boolean> {
    const before = this.keys;
    await this.check();
    return this.keys !== before;
  }

  close(): void {
    this.watcher?.close();
  }

  /** One look at a time; callers arriving meanwhile share it. */
  private check(): Promise<void> {
    this.checking ??= this.look().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async look(): Promise<void> {
    this.dirty = false;
    this.checkedAt = Date.now();
    try {
      const version = versionOf(await stat(this.file));
      if (version === this.version) return;
      const keys = keySet(await readFile(this.file, "utf8"));
      this.keys = keys;
      this.version = version;
    } catch (err) {
      // Not recorded as seen: the next look reads it again (a writer may be half way through).
      this.onWarning(`cannot reload BERTH_JWKS_FILE ${this.file}; the previous keys stay in force`, err);
    }
  }
}

function versionOf(s: { ino: number; size: number; mtimeMs: number; ctimeMs: number }): string {
  return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
}

function keySet(text: string): JWTVerifyGetKey {
  return createLocalJWKSet(JSON.parse(text) as JSONWebKeySet);
}

function claimRefused(claim: string, message: string, extra: Record<string, string> = {}): BerthError {
  return unauthenticated("TOKEN_INVALID", message, { claim, ...extra });
}

/** jose's refusal → ours; anything not about claims is a bare TOKEN_INVALID (nothing for a forger to learn). */
function refusal(e: unknown, opts: JwtOptions): BerthError {
  if (e instanceof joseErrors.JWTExpired) return unauthenticated("TOKEN_EXPIRED", "token expired", { claim: "exp" });
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    const claim = e.claim;
    if (claim === "nbf" && e.reason === "check_failed") return unauthenticated("TOKEN_NOT_YET_VALID", "token not valid yet (nbf is in the future)", { claim: "nbf" });
    if (claim === "exp" && e.reason === "missing") {
      return claimRefused("exp", `token has no exp claim: tokens must expire, at most ${opts.maxLifetimeSeconds} s after they are issued`);
    }
    if (claim === "iss") return claimRefused("iss", `token issuer (iss) is not the one this server accepts`);
    if (claim === "aud") return claimRefused("aud", `token audience (aud) does not include the one this server accepts`);
    return claimRefused(claim, `token claim ${claim} is ${e.reason === "missing" ? "missing" : "invalid"}`);
  }
  if (e instanceof joseErrors.JOSEAlgNotAllowed) return unauthenticated("TOKEN_INVALID", "token algorithm not accepted");
  return unauthenticated("TOKEN_INVALID", "invalid token");
}

export function jwtAuthenticator(opts: JwtOptions): Authenticator {
  const onWarning = opts.onWarning ?? (() => {});
  let algorithms: readonly string[];
  let keys: () => JWTVerifyGetKey | Promise<JWTVerifyGetKey>;
  let jwks: JwksFile | undefined;
  if (opts.secret) {
    algorithms = SECRET_ALGORITHMS;
    const secret = new TextEncoder().encode(opts.secret);
    const getSecret: JWTVerifyGetKey = () => secret;
    keys = () => getSecret;
  } else if (opts.jwksFile) {
    algorithms = JWKS_ALGORITHMS;
    const file = new JwksFile(opts.jwksFile, onWarning, opts.watchJwks ?? true);
    jwks = file;
    keys = () => file.current();
  } else {
    throw new ConfigError("BERTH_JWT_SECRET", "BERTH_AUTH=jwt needs BERTH_JWT_SECRET or BERTH_JWKS_FILE");
  }
  const verifyOptions: JWTVerifyOptions = {
    algorithms: [...algorithms],
    requiredClaims: ["exp"],
    clockTolerance: opts.clockSkewSeconds,
    ...(opts.issuer ? { issuer: opts.issuer } : {}),
    ...(opts.audience ? { audience: opts.audience } : {}),
  };

  const verify = async (token: string): Promise<JWTPayload> => {
    try {
      return (await jwtVerify(token, await keys(), verifyOptions)).payload;
    } catch (e) {
      // A token signed with a key we do not hold (yet): the file may have just been rotated.
      const unknownKey = e instanceof joseErrors.JWKSNoMatchingKey || e instanceof joseErrors.JWSSignatureVerificationFailed;
      if (jwks === undefined || !unknownKey || !(await jwks.recheck())) throw e;
      return (await jwtVerify(token, await jwks.current(), verifyOptions)).payload;
    }
  };

  return {
    async authenticate(header: HeaderReader): Promise<Principal> {
      const token = bearerToken(header("authorization"));
      if (token === undefined) throw unauthenticated("TOKEN_MISSING", "missing authorization: Bearer <token>");
      if (token === "") throw unauthenticated("TOKEN_INVALID", "malformed authorization header; expected Bearer <token>");
      let alg: unknown;
      try {
        alg = decodeProtectedHeader(token).alg;
      } catch {
        throw unauthenticated("TOKEN_INVALID", "invalid token");
      }
      if (typeof alg !== "string" || !algorithms.includes(alg)) {
        const shown = typeof alg === "string" ? alg.slice(0, 20) : "(none)";
        throw unauthenticated("TOKEN_INVALID", `token algorithm ${shown} not accepted; accepted: ${algorithms.join(", ")}`, { alg: shown });
      }
      let payload: JWTPayload;
      try {
        payload = await verify(token);
      } catch (e) {
        throw refusal(e, opts);
      }
      const now = Math.floor(Date.now() / 1000);
      // jose checks that exp is a number; the lifetime and iat are ours.
      const exp = payload.exp!;
      if (payload.iat !== undefined && payload.iat > now + opts.clockSkewSeconds) throw claimRefused("iat", "token issued in the future (iat)");
      const lifetime = exp - (payload.iat ?? now);
      if (lifetime > opts.maxLifetimeSeconds) {
        throw claimRefused("exp", `token lifetime ${lifetime} s is over the maximum of ${opts.maxLifetimeSeconds} s (BERTH_JWT_MAX_LIFETIME_S)`, {
          lifetime_s: String(lifetime),
          max_lifetime_s: String(opts.maxLifetimeSeconds),
        });
      }
      if (typeof payload.sub !== "string" || payload.sub === "") throw claimRefused("sub", "token has no sub");
      const claim = (payload as { roles?: unknown }).roles;
      const roles: Role[] = Array.isArray(claim) ? claim.filter(isRole) : ["agent"];
      const repos = (payload as { repos?: unknown }).repos;
      if (repos !== undefined && reposProblem(repos) !== undefined) throw unauthenticated("TOKEN_INVALID", `the repos claim ${reposProblem(repos)}`);
      return principalOf(payload.sub, roles, grantsOf((repos ?? []) as string[]));
    },
    close() {
      jwks?.close();
    },
  };
}
