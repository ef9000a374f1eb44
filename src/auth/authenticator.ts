/**
 * createAuthenticator(config.auth): the Authenticator the transports' pipeline uses.
 * - none:  every call gets the anonymous principal (roles agent+admin, no agent id).
 * - token: BERTH_AUTH_TOKENS_FILE, see ./token-file.ts for the format.
 * - jwt:   BERTH_JWT_SECRET (HS256) or BERTH_JWKS_FILE, see ./jwt.ts.
 * Failures throw BerthError "unauthenticated" with reason TOKEN_MISSING, TOKEN_INVALID, TOKEN_EXPIRED or TOKEN_NOT_YET_VALID.
 */
import type { Config } from "../config.js";
import { ConfigError } from "../config.js";
import { ANONYMOUS_PRINCIPAL, type Authenticator } from "./principal.js";
import { tokenAuthenticator } from "./token-file.js";
import { jwtAuthenticator } from "./jwt.js";

export type { Authenticator, HeaderReader } from "./principal.js";
export { ANONYMOUS_PRINCIPAL } from "./principal.js";

export const noAuthenticator: Authenticator = Object.freeze({
  fixedPrincipal: ANONYMOUS_PRINCIPAL,
  authenticate: () => ANONYMOUS_PRINCIPAL,
});

/** Reads key/token files synchronously (at start); throws ConfigError on a bad file. `onWarning` hears of a JWKS file that cannot be reloaded. */
export function createAuthenticator(auth: Config["auth"], onWarning?: (message: string, err: unknown) => void): Authenticator {
  switch (auth.mode) {
    case "none":
      return noAuthenticator;
    case "token":
      if (!auth.tokensFile) throw new ConfigError("BERTH_AUTH_TOKENS_FILE", "required when BERTH_AUTH=token");
      return tokenAuthenticator(auth.tokensFile);
    case "jwt":
      return jwtAuthenticator({
        secret: auth.jwtSecret,
        jwksFile: auth.jwksFile,
        issuer: auth.jwtIssuer,
        audience: auth.jwtAudience,
        maxLifetimeSeconds: auth.jwtMaxLifetimeSeconds,
        clockSkewSeconds: auth.jwtClockSkewSeconds,
        ...(onWarning ? { onWarning } : {}),
      });
  }
}
