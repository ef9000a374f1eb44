/**
 * createAuthenticator(config.auth): the Authenticator the transports' pipeline uses.
 * - none:  every call gets the anonymous principal (roles agent+admin, no agent id).
 * - token: BERTH_AUTH_TOKENS_FILE, see ./token-file.ts for the format.
 * - jwt:   BERTH_JWT_SECRET (HS256) or BERTH_JWKS_FILE, see ./jwt.ts.
 * Failures throw BerthError "unauthenticated" with reason TOKEN_MISSING, TOKEN_INVALID or TOKEN_EXPIRED.
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

/** Reads key/token files synchronously (at start); throws ConfigError on a bad file. */
export function createAuthenticator(auth: Config["auth"]): Authenticator {
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
      });
  }
}
