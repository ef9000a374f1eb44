/**
 * Configuration from the environment, validated at start. Every variable is declared once
 * in VARIABLES (name, default, meaning); the README's configuration table is checked against
 * it by test/config.test.ts, so the docs cannot drift from the code.
 */
import { isIP } from "node:net";
import { homedir, hostname } from "node:os";
import path from "node:path";

export type AuthMode = "none" | "token" | "jwt";
export type NatsEncoding = "binary" | "json";

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

export interface Config {
  readonly grpcAddr: ListenAddress;
  /** BERTH_ADVERTISE_ADDR as given (undefined: derived from the gRPC listener, see advertiseAddress). */
  readonly advertiseAddr: ListenAddress | undefined;
  readonly httpAddr: ListenAddress;
  readonly dataDir: string;
  /** When undefined, the embedded PGlite database under dataDir is used. */
  readonly databaseUrl: string | undefined;
  readonly tls: { readonly cert: string; readonly key: string; readonly clientCa: string | undefined } | undefined;
  readonly auth: {
    readonly mode: AuthMode;
    readonly tokensFile: string | undefined;
    readonly jwtSecret: string | undefined;
    readonly jwksFile: string | undefined;
    readonly jwtIssuer: string | undefined;
    readonly jwtAudience: string | undefined;
    /** BERTH_JWT_MAX_LIFETIME_S: exp − iat (or exp − now) above it is refused. */
    readonly jwtMaxLifetimeSeconds: number;
    /** BERTH_JWT_CLOCK_SKEW_S: leeway on exp, nbf and iat. */
    readonly jwtClockSkewSeconds: number;
  };
  /** Allow listening on a non-loopback address without auth. */
  readonly insecure: boolean;
  readonly logLevel: string;
  readonly shutdownGraceMs: number;
  readonly sessionLeaseMs: number;
  /** BERTH_INSTANCE_NAME: stable across restarts; undefined = hostname:grpc-port. */
  readonly instanceName: string | undefined;
  readonly pinNonTerminal: boolean;
  readonly gcIntervalMs: number;
  readonly idleTtlSeconds: number;
  readonly maxTtlSeconds: number;
  readonly strandedTtlSeconds: number;
  readonly maxFileBytes: number;
  /** BERTH_MAX_OVERLAY_FILES / BERTH_MAX_OVERLAY_BYTES per workspace; 0 = no limit. */
  readonly maxOverlayFiles: number;
  readonly maxOverlayBytes: number;
  /** BERTH_MAX_CALLS_PER_AGENT / BERTH_MAX_STREAMS_PER_AGENT per instance; 0 = no limit. */
  readonly maxCallsPerAgent: number;
  readonly maxStreamsPerAgent: number;
  readonly releaseClaimsOnSubmit: boolean;
  readonly natsUrl: string | undefined;
  readonly natsEncoding: NatsEncoding;
  readonly natsStream: string;
  readonly eventRetentionSeconds: number;
  /** The event hub's safety-net poll (other instances' commits normally arrive by NOTIFY). */
  readonly eventPollMs: number;
  /** Where CommitChangeset puts a changeset's commit: <prefix><changeset_id> (docs/landing-work.md). */
  readonly commitRefPrefix: string;
  /** Repositories on a git server (docs/landing-work.md): the background fetch of this instance's mirrors (0: off), a remote git's timeout, the http(s) header file. */
  readonly mirrorFetchIntervalMs: number;
  readonly remoteTimeoutMs: number;
  readonly gitHttpHeaderFile: string | undefined;
  /** Turns (src/turns/): environments and the workspace map. */
  readonly envRoot: string;
  readonly envIdleTtlMs: number;
  readonly envApprovalTtlMs: number;
  readonly envPoolMax: number;
  readonly envSpares: number;
  readonly mapMaxDepth: number;
  readonly mapMaxEntries: number;
  readonly mapBudgetMs: number;
  readonly mapTtlMs: number;
  /** Prometheus /metrics listener (src/metrics/); undefined when BERTH_METRICS_ADDR=off. */
  readonly metricsAddr: ListenAddress | undefined;
  /** OTLP/HTTP trace export (src/observability/tracing/): base endpoint, undefined when unset. */
  readonly otlp: { readonly endpoint: string; readonly headers: Readonly<Record<string, string>>; readonly serviceName: string } | undefined;
}

export interface VariableSpec {
  readonly name: string;
  readonly default: string;
  readonly meaning: string;
}

export const VARIABLES: readonly VariableSpec[] = [
  { name: "BERTH_ADDR", default: "127.0.0.1:50051", meaning: "gRPC listen address (host:port; port 0 picks a free port and logs it)" },
  { name: "BERTH_ADVERTISE_ADDR", default: "(BERTH_ADDR, or hostname:port when it listens on 0.0.0.0/::)", meaning: "the internal gRPC address (host:port) other instances forward this instance's turn RPCs to; written into its instances row at start" },
  { name: "BERTH_HTTP_ADDR", default: "127.0.0.1:8080", meaning: "Connect, gRPC-Web and JSON listen address (HTTP/1.1 and h2)" },
  { name: "BERTH_DATA_DIR", default: "./.berth", meaning: "where the embedded PostgreSQL (PGlite) keeps its data when DATABASE_URL is unset, and this instance's mirrors of repositories on a git server (mirrors/; one data directory per instance)" },
  { name: "DATABASE_URL", default: "(unset: embedded)", meaning: "PostgreSQL connection string, e.g. postgres://127.0.0.1:5432/berth" },
  { name: "BERTH_TLS_CERT", default: "(unset)", meaning: "PEM certificate chain; with BERTH_TLS_KEY turns TLS on for both ports" },
  { name: "BERTH_TLS_KEY", default: "(unset)", meaning: "PEM private key of BERTH_TLS_CERT" },
  { name: "BERTH_TLS_CLIENT_CA", default: "(unset)", meaning: "PEM CA bundle; when set, clients must present a certificate it signed" },
  { name: "BERTH_AUTH", default: "none", meaning: "none (loopback development), token or jwt" },
  { name: "BERTH_AUTH_TOKENS_FILE", default: "(unset)", meaning: "token auth: JSON file of sha256-hashed bearer tokens, each with an agent id and roles" },
  { name: "BERTH_JWT_SECRET", default: "(unset)", meaning: "jwt auth: HS256 shared secret" },
  { name: "BERTH_JWKS_FILE", default: "(unset)", meaning: "jwt auth: JSON Web Key Set file (instead of a secret)" },
  { name: "BERTH_JWT_ISSUER", default: "(unset)", meaning: "jwt auth: required `iss`, when set" },
  { name: "BERTH_JWT_AUDIENCE", default: "(unset)", meaning: "jwt auth: required `aud`, when set" },
  { name: "BERTH_JWT_MAX_LIFETIME_S", default: "86400", meaning: "jwt auth: longest token accepted: exp − iat (exp − now without iat) above it is refused; every token needs exp" },
  { name: "BERTH_JWT_CLOCK_SKEW_S", default: "30", meaning: "jwt auth: leeway on exp, nbf and iat for clocks that disagree" },
  { name: "BERTH_INSECURE", default: "0", meaning: "1 allows a non-loopback address without auth (same as --insecure)" },
  { name: "BERTH_LOG_FORMAT", default: "(terminal: pretty)", meaning: "json forces JSON logs on a terminal too" },
  { name: "BERTH_LOG_LEVEL", default: "info", meaning: "pino level: trace, debug, info, warn, error, fatal, silent" },
  { name: "BERTH_SHUTDOWN_GRACE_MS", default: "10000", meaning: "on SIGTERM/SIGINT, how long unary calls may finish before streams end with UNAVAILABLE" },
  { name: "BERTH_INSTANCE_NAME", default: "(hostname:grpc-port)", meaning: "this instance's stable name across restarts: a restart strands the sessions of its previous incarnation at once; a start is refused while an instance of the same name still heartbeats" },
  { name: "BERTH_SESSION_LEASE_MS", default: "30000", meaning: "a session stays connected this long after its last activity on any instance (a Heartbeat or any call naming it, by its own agent: an admin's or a `berth-observer: 1` call is not activity), and while its agent's AttachSession stream is open or a turn of it runs" },
  { name: "BERTH_PIN_NONTERMINAL", default: "1", meaning: "1: GC never evicts a workspace whose changeset is not terminal (DRAFT included): idle and max lifetime keep it, disconnection and expiry strand it. 0: no pinning, but unfinished work is still never destroyed: idle and max lifetime strand it (resumable); only terminal work is evicted" },
  { name: "BERTH_GC_INTERVAL_MS", default: "60000", meaning: "period of the GC loop (expiry, idle and max-lifetime GC, disconnects, stranded sweep)" },
  { name: "BERTH_IDLE_TTL_S", default: "3600", meaning: "a workspace idle this long is collected (pin-aware)" },
  { name: "BERTH_MAX_TTL_S", default: "86400", meaning: "a workspace alive this long is collected (pin-aware)" },
  { name: "BERTH_STRANDED_TTL_S", default: "14400", meaning: "a stranded workspace is abandoned (reason session_abandoned:auto_ttl) after this long" },
  { name: "BERTH_MAX_FILE_BYTES", default: "8388608", meaning: "largest file WriteFile accepts and ReadFile answers from the base (8 MiB); larger is RESOURCE_EXHAUSTED FILE_TOO_LARGE" },
  { name: "BERTH_MAX_OVERLAY_FILES", default: "10000", meaning: "overlay rows (written or deleted paths) a workspace may hold; a write beyond is RESOURCE_EXHAUSTED OVERLAY_QUOTA_EXCEEDED; 0: no limit" },
  { name: "BERTH_MAX_OVERLAY_BYTES", default: "268435456", meaning: "bytes of content a workspace's overlay may hold (256 MiB); a write beyond is RESOURCE_EXHAUSTED OVERLAY_QUOTA_EXCEEDED; 0: no limit" },
  { name: "BERTH_MAX_CALLS_PER_AGENT", default: "32", meaning: "unary calls one authenticated agent may have in flight on an instance; more are RESOURCE_EXHAUSTED TOO_MANY_CALLS with RetryInfo; 0: no limit" },
  { name: "BERTH_MAX_STREAMS_PER_AGENT", default: "16", meaning: "streams (WatchEvents, AttachSession, WatchTurns, …) one authenticated agent may hold open on an instance, counted apart from unary calls; 0: no limit" },
  { name: "BERTH_RELEASE_CLAIMS_ON_SUBMIT", default: "1", meaning: "1: a changeset entering SUBMITTED releases its sessions' symbol claims; 0: they are held until merged, rejected or closed" },
  { name: "NATS_URL", default: "(unset)", meaning: "NATS server with JetStream; when set, stored events are relayed to it" },
  { name: "BERTH_NATS_ENCODING", default: "binary", meaning: "payload of relayed events: binary (protobuf) or json (proto3 JSON)" },
  { name: "BERTH_NATS_STREAM", default: "BERTH_EVENTS", meaning: "JetStream stream the relay creates or updates at start" },
  { name: "BERTH_EVENT_RETENTION_S", default: "604800", meaning: "events older than this are pruned from PostgreSQL and JetStream (7 days)" },
  { name: "BERTH_EVENT_POLL_MS", default: "2000", meaning: "how often each instance's event hub and NATS relay read the outbox even without a notification (the safety net under LISTEN/NOTIFY)" },
  { name: "BERTH_COMMIT_REF_PREFIX", default: "refs/heads/berth/", meaning: "CommitChangeset writes a changeset's commit on <prefix><changeset_id> in its repository" },
  { name: "BERTH_MIRROR_FETCH_INTERVAL_MS", default: "60000", meaning: "how often each instance fetches its mirrors of repositories on a git server (under BERTH_DATA_DIR/mirrors) in the background; calls that need the server's current refs fetch anyway; 0: never in the background" },
  { name: "BERTH_REMOTE_TIMEOUT_MS", default: "120000", meaning: "a fetch, push or ls-remote to a git server still running after this long is stopped (UNAVAILABLE REMOTE_UNREACHABLE)" },
  { name: "BERTH_GIT_HTTP_HEADER_FILE", default: "(unset)", meaning: "a file holding one `Name: value` HTTP header line (e.g. `Authorization: Bearer …`) sent to http(s) git servers; read at each fetch and push, never logged (docs/security.md#remote-credentials)" },
  { name: "BERTH_ENV_ROOT", default: "$XDG_DATA_HOME/berth/envs (~/.local/share/berth/envs)", meaning: "where turn environments live, one git checkout per workspace id; refused inside a git repository" },
  { name: "BERTH_ENV_IDLE_TTL_MS", default: "60000", meaning: "an environment parked idle (turn COMPLETED) is kept warm this long" },
  { name: "BERTH_ENV_APPROVAL_TTL_MS", default: "600000", meaning: "an environment parked AWAITING_APPROVAL is kept warm this long" },
  { name: "BERTH_ENV_SPARES", default: "2", meaning: "pre-extracted base trees kept per (repository, commit) so a cold acquire is a rename; 0 disables" },
  { name: "BERTH_ENV_POOL_MAX", default: "64", meaning: "environments the pool seats; when full, the least recently used IDLE one is evicted, and a turn that cannot be seated runs unreserved" },
  { name: "BERTH_MAP_MAX_DEPTH", default: "3", meaning: "workspace map: depth of the tree (root children are depth 1)" },
  { name: "BERTH_MAP_MAX_ENTRIES", default: "200", meaning: "workspace map: entries shown (\"showing N of M\")" },
  { name: "BERTH_MAP_BUDGET_MS", default: "1500", meaning: "workspace map: how long a turn waits for the walk; zero or negative is refused" },
  { name: "BERTH_MAP_TTL_MS", default: "30000", meaning: "workspace map: how long a map (or a lapsed budget) is cached; 0 caches nothing" },
  { name: "BERTH_METRICS_ADDR", default: "127.0.0.1:9464", meaning: "Prometheus metrics listen address (GET /metrics, no auth: bind it where only the scraper reaches); off disables it" },
  { name: "OTEL_EXPORTER_OTLP_ENDPOINT", default: "(unset)", meaning: "OTLP/HTTP collector base URL, e.g. http://127.0.0.1:4318; when set, a span per RPC is exported to <url>/v1/traces" },
  { name: "OTEL_EXPORTER_OTLP_HEADERS", default: "(unset)", meaning: "extra headers for the OTLP export, key=value pairs separated by commas" },
  { name: "OTEL_SERVICE_NAME", default: "berth", meaning: "service.name of exported spans" },
];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

type Env = Readonly<Record<string, string | undefined>>;

function get(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

export function parseAddress(name: string, raw: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(raw);
  if (!m) throw new ConfigError(name, `expected host:port (e.g. 127.0.0.1:50051), got "${raw}"`);
  const host = (m[1] ?? m[2])!;
  const port = Number(m[3]);
  if (port > 65535) throw new ConfigError(name, `port ${port} is out of range 0–65535`);
  return { host, port };
}

function integer(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = get(env, name);
  if (raw === undefined) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** A ref prefix under refs/ ending in "/" whose every component git accepts (checked again by git at each update). */
function refPrefix(env: Env): string {
  const raw = get(env, "BERTH_COMMIT_REF_PREFIX") ?? "refs/heads/berth/";
  const parts = raw.split("/").slice(0, -1);
  const ok = raw.startsWith("refs/") && raw.endsWith("/") && parts.length >= 2 && parts.every((c) => /^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(c) && !c.endsWith(".lock") && !c.includes(".."));
  if (!ok) throw new ConfigError("BERTH_COMMIT_REF_PREFIX", `expected a ref prefix such as refs/heads/berth/ (under refs/, ending in /), got "${raw}"`);
  return raw;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = get(env, name);
  if (raw === undefined) return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(name, `expected 1 or 0, got "${raw}"`);
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = get(env, name);
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(name, `expected one of ${allowed.join(", ")}, got "${raw}"`);
  return raw as T;
}

export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  if (isIP(host) === 6) return host === "::1";
  return false;
}

function isWildcard(host: string): boolean {
  return host === "0.0.0.0" || host === "::" || host === "";
}

/**
 * The address other instances forward turn RPCs to: BERTH_ADVERTISE_ADDR when set; else the gRPC
 * listener's host (unless it is a wildcard, 0.0.0.0 or ::, which nobody can dial: then this
 * machine's hostname) with the port actually bound (BERTH_ADDR may say port 0).
 */
export function advertiseAddress(config: Pick<Config, "grpcAddr" | "advertiseAddr">, boundPort: number): string {
  const a = config.advertiseAddr ?? { host: isWildcard(config.grpcAddr.host) ? hostname() : config.grpcAddr.host, port: boundPort };
  return a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

export interface ConfigOverrides {
  readonly insecure?: boolean;
}

/** Reads and validates the configuration; throws ConfigError naming the bad variable. */
export function loadConfig(env: Env = process.env, overrides: ConfigOverrides = {}): Config {
  const grpcAddr = parseAddress("BERTH_ADDR", get(env, "BERTH_ADDR") ?? "127.0.0.1:50051");
  const httpAddr = parseAddress("BERTH_HTTP_ADDR", get(env, "BERTH_HTTP_ADDR") ?? "127.0.0.1:8080");
  const advertiseRaw = get(env, "BERTH_ADVERTISE_ADDR");
  const advertiseAddr = advertiseRaw === undefined ? undefined : parseAddress("BERTH_ADVERTISE_ADDR", advertiseRaw);
  if (advertiseAddr !== undefined && (advertiseAddr.port === 0 || isWildcard(advertiseAddr.host))) {
    throw new ConfigError("BERTH_ADVERTISE_ADDR", `must be an address other instances can dial (a host and a port other than 0), got "${advertiseRaw}"`);
  }

  const cert = get(env, "BERTH_TLS_CERT");
  const key = get(env, "BERTH_TLS_KEY");
  const clientCa = get(env, "BERTH_TLS_CLIENT_CA");
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError(cert === undefined ? "BERTH_TLS_CERT" : "BERTH_TLS_KEY", "BERTH_TLS_CERT and BERTH_TLS_KEY must be set together");
  }
  if (clientCa !== undefined && cert === undefined) throw new ConfigError("BERTH_TLS_CLIENT_CA", "needs BERTH_TLS_CERT and BERTH_TLS_KEY");

  const mode = oneOf<AuthMode>(env, "BERTH_AUTH", ["none", "token", "jwt"], "none");
  const auth = {
    mode,
    tokensFile: get(env, "BERTH_AUTH_TOKENS_FILE"),
    jwtSecret: get(env, "BERTH_JWT_SECRET"),
    jwksFile: get(env, "BERTH_JWKS_FILE"),
    jwtIssuer: get(env, "BERTH_JWT_ISSUER"),
    jwtAudience: get(env, "BERTH_JWT_AUDIENCE"),
    jwtMaxLifetimeSeconds: integer(env, "BERTH_JWT_MAX_LIFETIME_S", 86_400, 1, 31_536_000),
    jwtClockSkewSeconds: integer(env, "BERTH_JWT_CLOCK_SKEW_S", 30, 0, 600),
  };
  if (mode === "token" && !auth.tokensFile) throw new ConfigError("BERTH_AUTH_TOKENS_FILE", "required when BERTH_AUTH=token");
  if (mode === "jwt" && !auth.jwtSecret && !auth.jwksFile) throw new ConfigError("BERTH_JWT_SECRET", "BERTH_AUTH=jwt needs BERTH_JWT_SECRET or BERTH_JWKS_FILE");
  if (mode === "jwt" && auth.jwtSecret && auth.jwksFile) throw new ConfigError("BERTH_JWKS_FILE", "set BERTH_JWT_SECRET or BERTH_JWKS_FILE, not both");
  if (auth.jwtSecret !== undefined && Buffer.byteLength(auth.jwtSecret) < 32) throw new ConfigError("BERTH_JWT_SECRET", "must be at least 32 bytes for HS256");

  const insecure = overrides.insecure ?? flag(env, "BERTH_INSECURE", false);
  if (mode === "none" && !insecure) {
    for (const [name, addr] of [["BERTH_ADDR", grpcAddr], ["BERTH_HTTP_ADDR", httpAddr]] as const) {
      if (!isLoopback(addr.host)) {
        throw new ConfigError(name, `listening on non-loopback ${addr.host} without auth; set BERTH_AUTH=token|jwt or pass --insecure`);
      }
    }
  }

  const logLevel = oneOf(env, "BERTH_LOG_LEVEL", ["trace", "debug", "info", "warn", "error", "fatal", "silent"], "info");
  const natsUrl = get(env, "NATS_URL");
  if (natsUrl !== undefined && !/^(nats|tls|ws|wss):\/\/[^\s]+$|^[^\s:/]+:\d+$/.test(natsUrl)) {
    throw new ConfigError("NATS_URL", `expected nats://host:port, got "${natsUrl}"`);
  }
  const databaseUrl = get(env, "DATABASE_URL");
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL", `expected postgres://…, got "${databaseUrl.replace(/:[^:@/]*@/, ":***@")}"`);
  }
  const metricsRaw = get(env, "BERTH_METRICS_ADDR") ?? "127.0.0.1:9464";
  const metricsAddr = /^off$/i.test(metricsRaw) ? undefined : parseAddress("BERTH_METRICS_ADDR", metricsRaw);
  const otlpEndpoint = get(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (otlpEndpoint !== undefined && !/^https?:\/\/[^\s]+$/.test(otlpEndpoint)) {
    throw new ConfigError("OTEL_EXPORTER_OTLP_ENDPOINT", `expected http(s)://host:port, got "${otlpEndpoint}"`);
  }
  const otlpHeaders: Record<string, string> = {};
  for (const pair of (get(env, "OTEL_EXPORTER_OTLP_HEADERS") ?? "").split(",")) {
    if (pair.trim() === "") continue;
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new ConfigError("OTEL_EXPORTER_OTLP_HEADERS", "expected key=value pairs separated by commas");
    otlpHeaders[decodeURIComponent(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim());
  }
  const instanceName = get(env, "BERTH_INSTANCE_NAME");
  if (instanceName !== undefined && !/^[\x21-\x7e]{1,200}$/.test(instanceName)) {
    throw new ConfigError("BERTH_INSTANCE_NAME", `expected 1 to 200 printable characters without spaces, got "${instanceName}"`);
  }
  const natsStream = get(env, "BERTH_NATS_STREAM") ?? "BERTH_EVENTS";
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(natsStream)) throw new ConfigError("BERTH_NATS_STREAM", "letters, digits, _ and - only");

  return {
    grpcAddr,
    advertiseAddr,
    httpAddr,
    dataDir: path.resolve(get(env, "BERTH_DATA_DIR") ?? "./.berth"),
    databaseUrl,
    tls: cert && key ? { cert, key, clientCa } : undefined,
    auth,
    insecure,
    logLevel,
    shutdownGraceMs: integer(env, "BERTH_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    sessionLeaseMs: integer(env, "BERTH_SESSION_LEASE_MS", 30_000, 1_000, 86_400_000),
    instanceName,
    pinNonTerminal: flag(env, "BERTH_PIN_NONTERMINAL", true),
    gcIntervalMs: integer(env, "BERTH_GC_INTERVAL_MS", 60_000, 100, 86_400_000),
    idleTtlSeconds: integer(env, "BERTH_IDLE_TTL_S", 3600, 1),
    maxTtlSeconds: integer(env, "BERTH_MAX_TTL_S", 86_400, 1),
    strandedTtlSeconds: integer(env, "BERTH_STRANDED_TTL_S", 14_400, 1),
    maxFileBytes: integer(env, "BERTH_MAX_FILE_BYTES", 8 * 1024 * 1024, 1, 256 * 1024 * 1024),
    maxOverlayFiles: integer(env, "BERTH_MAX_OVERLAY_FILES", 10_000, 0),
    maxOverlayBytes: integer(env, "BERTH_MAX_OVERLAY_BYTES", 256 * 1024 * 1024, 0),
    maxCallsPerAgent: integer(env, "BERTH_MAX_CALLS_PER_AGENT", 32, 0, 1_000_000),
    maxStreamsPerAgent: integer(env, "BERTH_MAX_STREAMS_PER_AGENT", 16, 0, 1_000_000),
    releaseClaimsOnSubmit: flag(env, "BERTH_RELEASE_CLAIMS_ON_SUBMIT", true),
    natsUrl,
    natsEncoding: oneOf<NatsEncoding>(env, "BERTH_NATS_ENCODING", ["binary", "json"], "binary"),
    natsStream,
    eventRetentionSeconds: integer(env, "BERTH_EVENT_RETENTION_S", 604_800, 60),
    eventPollMs: integer(env, "BERTH_EVENT_POLL_MS", 2000, 10, 3_600_000),
    commitRefPrefix: refPrefix(env),
    mirrorFetchIntervalMs: integer(env, "BERTH_MIRROR_FETCH_INTERVAL_MS", 60_000, 0, 86_400_000),
    remoteTimeoutMs: integer(env, "BERTH_REMOTE_TIMEOUT_MS", 120_000, 1_000, 3_600_000),
    gitHttpHeaderFile: get(env, "BERTH_GIT_HTTP_HEADER_FILE"),
    envRoot: path.resolve(get(env, "BERTH_ENV_ROOT") ?? defaultEnvRoot(env)),
    envIdleTtlMs: integer(env, "BERTH_ENV_IDLE_TTL_MS", 60_000, 0),
    envApprovalTtlMs: integer(env, "BERTH_ENV_APPROVAL_TTL_MS", 600_000, 0),
    envPoolMax: integer(env, "BERTH_ENV_POOL_MAX", 64, 0, 1_000_000),
    envSpares: integer(env, "BERTH_ENV_SPARES", 2, 0, 16),
    mapMaxDepth: integer(env, "BERTH_MAP_MAX_DEPTH", 3, 1, 64),
    mapMaxEntries: integer(env, "BERTH_MAP_MAX_ENTRIES", 200, 1, 1_000_000),
    mapBudgetMs: integer(env, "BERTH_MAP_BUDGET_MS", 1500, 1, 600_000),
    mapTtlMs: integer(env, "BERTH_MAP_TTL_MS", 30_000, 0),
    metricsAddr,
    otlp: otlpEndpoint === undefined ? undefined : { endpoint: otlpEndpoint.replace(/\/+$/, ""), headers: otlpHeaders, serviceName: get(env, "OTEL_SERVICE_NAME") ?? "berth" },
  };
}

/**
 * A per-user data directory, outside any repository: an environment is a git checkout, and one
 * under the directory Berth was started from (often a repository) would have `git` in it find
 * that repository's files around it.
 */
export function defaultEnvRoot(env: Env): string {
  const xdg = get(env, "XDG_DATA_HOME");
  // The XDG spec: a relative XDG_DATA_HOME is invalid and ignored.
  const data = xdg && path.isAbsolute(xdg) ? xdg : path.join(get(env, "HOME") ?? homedir(), ".local", "share");
  return path.join(data, "berth", "envs");
}
