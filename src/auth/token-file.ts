/**
 * BERTH_AUTH=token: static bearer tokens, stored hashed.
 *
 * BERTH_AUTH_TOKENS_FILE is JSON:
 *
 *   {
 *     "tokens": [
 *       { "sha256": "<64 hex chars: sha256 of the token's UTF-8 bytes>", "agent_id": "agent-a", "roles": ["agent"], "repos": ["berth", "*"] },
 *       { "sha256": "…", "agent_id": "ops", "roles": ["agent", "admin"] }
 *     ]
 *   }
 *
 * Make a hash with `printf %s "$TOKEN" | sha256sum`. Clients send `authorization: Bearer <token>`.
 * roles: "agent", "admin" and/or "reviewer"; defaults to ["agent"] when omitted. repos: the repositories the
 * agent may use, by name or id, or "*" for every one (src/auth/grants.ts); omitted, none: an
 * agent entry without repos is refused on every repository (REPOSITORY_NOT_GRANTED) and named in
 * a warning at start. Admins use every repository. The file is read once at start.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { ConfigError } from "../config.js";
import { unauthenticated } from "../platform/errors.js";
import { grantsOf, reposProblem } from "./grants.js";
import { bearerToken, isRole, principalOf, type Authenticator, type HeaderReader, type Principal } from "./principal.js";

interface TokenEntry {
  readonly hash: Buffer;
  readonly principal: Principal;
  /** The entry has no `repos` (and is no admin): it reaches no repository. */
  readonly ungranted: boolean;
}

const VAR = "BERTH_AUTH_TOKENS_FILE";

export function parseTokensFile(json: string, source = VAR): TokenEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (e) {
    throw new ConfigError(source, `not valid JSON: ${(e as Error).message}`);
  }
  const tokens = (doc as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(tokens)) throw new ConfigError(source, 'expected {"tokens": [...]}');
  const seen = new Set<string>();
  return tokens.map((t: unknown, i) => {
    const e = t as { sha256?: unknown; agent_id?: unknown; roles?: unknown; repos?: unknown } | null;
    if (typeof e?.sha256 !== "string" || !/^[0-9a-fA-F]{64}$/.test(e.sha256)) {
      throw new ConfigError(source, `tokens[${i}].sha256 must be 64 hex characters (sha256 of the token)`);
    }
    if (typeof e.agent_id !== "string" || e.agent_id === "") throw new ConfigError(source, `tokens[${i}].agent_id is required`);
    const roles = e.roles === undefined ? ["agent"] : e.roles;
    if (!Array.isArray(roles) || !roles.every(isRole)) throw new ConfigError(source, `tokens[${i}].roles must be a list of "agent" / "admin" / "reviewer"`);
    const problem = e.repos === undefined ? undefined : reposProblem(e.repos);
    if (problem !== undefined) throw new ConfigError(source, `tokens[${i}].repos${problem.startsWith("[") ? "" : " "}${problem}`);
    const repos = (e.repos ?? []) as string[];
    const hex = e.sha256.toLowerCase();
    if (seen.has(hex)) throw new ConfigError(source, `tokens[${i}]: duplicate sha256`);
    seen.add(hex);
    return {
      hash: Buffer.from(hex, "hex"),
      principal: principalOf(e.agent_id, roles, grantsOf(repos)),
      ungranted: e.repos === undefined && !roles.includes("admin"),
    };
  });
}

export function tokenAuthenticator(tokensFile: string): Authenticator {
  let text: string;
  try {
    text = readFileSync(tokensFile, "utf8");
  } catch (e) {
    throw new ConfigError(VAR, `cannot read ${tokensFile}: ${(e as Error).message}`);
  }
  const entries = parseTokensFile(text);
  const ungranted = entries.filter((e) => e.ungranted).map((e) => e.principal.agentId!);
  return {
    ...(ungranted.length > 0
      ? { startupWarnings: [`${VAR}: token entries without "repos" reach no repository until granted: agent_id ${ungranted.map((a) => `"${a}"`).join(", ")} (see docs/security.md)`] }
      : {}),
    authenticate(header: HeaderReader): Principal {
      const token = bearerToken(header("authorization"));
      if (token === undefined) throw unauthenticated("TOKEN_MISSING", "missing authorization: Bearer <token>");
      if (token === "") throw unauthenticated("TOKEN_INVALID", "malformed authorization header; expected Bearer <token>");
      const hash = createHash("sha256").update(token, "utf8").digest();
      let found: Principal | undefined;
      // Compare against every entry, in constant time each, so timing tells nothing.
      for (const e of entries) {
        if (timingSafeEqual(e.hash, hash) && found === undefined) found = e.principal;
      }
      if (found === undefined) throw unauthenticated("TOKEN_INVALID", "invalid token");
      return found;
    },
  };
}
