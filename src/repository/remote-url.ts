/**
 * A repository's remote URL (RegisterRepository `remote_url`): which forms are accepted, and how
 * one is shown. Credentials never enter Berth through a URL (docs/security.md, "Remote
 * credentials"): a URL with a password, or with a user name where it can only be a secret
 * (http, https, git), is refused, never stripped, so that nobody believes Berth kept what it was
 * given. The server's own environment authenticates it to the git server instead.
 */
import { invalidArgument } from "../platform/errors.js";

/** The transports Berth fetches and pushes over (git's protocol.<name>.allow names). */
export type RemoteScheme = "file" | "git" | "ssh" | "http" | "https";

const SCHEMES: readonly RemoteScheme[] = ["file", "git", "ssh", "http", "https"];

/** scp-like `user@host:path`, which git takes for ssh: said, not guessed at. */
const SCP_LIKE = /^[^/:]+@[^/:]+:/;

/**
 * The URL as shown anywhere (messages, logs): its password, and a user name that may be a
 * token, replaced by `***`. What it keeps is what RegisterRepository would accept.
 */
export function redactUrl(raw: string): string {
  return raw.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/@?#]*)@/, (_m, scheme: string, userinfo: string) => {
    const ssh = /^ssh:/i.test(scheme);
    const user = userinfo.split(":")[0] ?? "";
    return ssh && !userinfo.includes(":") ? `${scheme}${user}@` : `${scheme}***@`;
  });
}

/** The scheme of an accepted URL. */
export function schemeOf(url: string): RemoteScheme {
  return url.slice(0, url.indexOf(":")).toLowerCase() as RemoteScheme;
}

/**
 * Returns `raw` when it is a URL Berth fetches from: one of SCHEMES, a host (or, for file://, an
 * absolute path and no host), no credentials, no query or fragment (a token may hide in either).
 * INVALID_ARGUMENT on `remote_url` otherwise, the value shown redacted.
 */
export function checkRemoteUrl(raw: string, field = "remote_url"): string {
  const shown = redactUrl(raw);
  const refuse = (reason: string, why: string) => invalidArgument([{ field, reason, description: `${shown}: ${why}` }]);
  if (SCP_LIKE.test(raw) && !raw.includes("://")) throw refuse("INVALID_FORMAT", "the scp-like form is not accepted; write it as ssh://user@host/path");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("INVALID_FORMAT", `not a URL (expected ${SCHEMES.map((s) => `${s}://`).join(", ")})`);
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase();
  if (!(SCHEMES as readonly string[]).includes(scheme)) throw refuse("UNSUPPORTED_SCHEME", `the scheme ${scheme} is not one Berth fetches over (${SCHEMES.join(", ")})`);
  if (url.password !== "" || (url.username !== "" && scheme !== "ssh")) {
    throw refuse("CREDENTIALS_IN_URL", "a URL must not hold credentials; the server's own environment provides them (docs/security.md, remote credentials)");
  }
  if (url.search !== "" || url.hash !== "" || raw.includes("?") || raw.includes("#")) throw refuse("INVALID_FORMAT", "a query or a fragment is not accepted");
  if (scheme === "file") {
    if (url.host !== "" && url.host !== "localhost") throw refuse("INVALID_FORMAT", "a file:// URL names a path on the server: file:///absolute/path");
  } else if (url.hostname === "" || url.pathname === "" || url.pathname === "/") {
    throw refuse("INVALID_FORMAT", "must name a host and a repository path");
  }
  return raw;
}
