/**
 * The access matrix (issue 13): every RPC of WorkspaceService and TurnService, called as the
 * session's owner, another agent granted the repository, an agent not granted it, an admin and a
 * caller without a token, on both ports (gRPC with a grpc-js client, the HTTP port with a Connect
 * client), through one real server with BERTH_AUTH=token. The outcome (status code and ErrorInfo
 * reason, and for some calls what was seen) must be the expected one and the same on both ports;
 * the table rendered from it is the one in docs/security.md (BERTH_WRITE_DOCS=1 rewrites it).
 */
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdKind, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { ChangesetState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { rpcFailure } from "../support/rpc-error.js";
import { clusterAt, rotatingTransport } from "../support/instances.js";
import { needs } from "../support/services.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");

/** The callers, as the columns of the matrix. */
const CALLERS = ["owner", "granted", "ungranted", "withdrawn", "admin", "none"] as const;
type Caller = (typeof CALLERS)[number];
const HEADINGS: Record<Caller, string> = {
  owner: "owner (alice, repos: matrix)",
  granted: 'other agent, granted (bob, repos: "*")',
  ungranted: "agent not granted (carol, repos: elsewhere)",
  withdrawn: "owner's agent, grant withdrawn (alice's 2nd token, repos: elsewhere)",
  admin: "admin (ops)",
  none: "no token",
};
const TOKENS: Record<Exclude<Caller, "none">, string> = {
  owner: randomBytes(16).toString("hex"),
  granted: randomBytes(16).toString("hex"),
  ungranted: randomBytes(16).toString("hex"),
  withdrawn: randomBytes(16).toString("hex"),
  admin: randomBytes(16).toString("hex"),
};
const PORTS = ["grpc", "connect"] as const;
type Port = (typeof PORTS)[number];

const OK = "OK";
const NO_TOKEN = "UNAUTHENTICATED TOKEN_MISSING";
const NOT_OWNER = "PERMISSION_DENIED NOT_SESSION_OWNER";
const NOT_GRANTED = "PERMISSION_DENIED REPOSITORY_NOT_GRANTED";
const INDEPENDENT = "PERMISSION_DENIED INDEPENDENT_REVIEW_REQUIRED";
const ADMIN_ONLY = "PERMISSION_DENIED ROLE_REQUIRED";
/**
 * A session RPC: its owner, while granted the session's repository, and admins; nothing of the
 * session told to anyone else.
 */
const SESSION = { owner: OK, granted: NOT_OWNER, ungranted: NOT_OWNER, withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN };
/** An RPC naming a repository: whoever is granted it, and admins. */
const REPOSITORY = { owner: OK, granted: OK, ungranted: NOT_GRANTED, withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN };

type Clients = {
  ws: Client<typeof WorkspaceService>;
  turns: Client<typeof TurnService>;
};

/** What a row's request is made from; each call gets fresh fixtures, made as alice (or ops). */
interface Fixtures {
  readonly repoId: string;
  readonly elsewhereId: string;
  /** A new active session of alice's in "matrix". */
  session(): Promise<{ sessionId: string; changesetId: string }>;
  /** A new session of alice's with a file of its own written (something to commit). */
  changed(): Promise<{ sessionId: string; changesetId: string }>;
  /** The same, its changeset APPROVED (something to merge). */
  approved(): Promise<{ sessionId: string; changesetId: string }>;
  /** A new session of alice's, its changeset moved by alice to VERIFYING (next: a decision). */
  verifying(): Promise<{ sessionId: string; changesetId: string }>;
  /** A new session of alice's with a running turn. */
  turn(): Promise<{ sessionId: string; turnId: string }>;
  /** A review comment alice wrote on a new changeset of hers. */
  comment(): Promise<{ changesetId: string; commentId: string }>;
  /** A new stranded session of alice's. */
  stranded(): Promise<string>;
  /** The hash of README.md (and of each del-N.txt) at the base commit. */
  readonly readmeHash: string;
  /** A number not given before: paths and symbols of one call only (claims outlive their call). */
  unique(): number;
  /** Events of a new session in "matrix", then "elsewhere", "matrix", "elsewhere": their session ids. */
  sentinels(): Promise<string[]>;
  readonly repoNames: ReadonlyMap<string, string>;
  /** Begins a turn on the session, as ops. */
  beginTurnAsAdmin(sessionId: string): Promise<void>;
}

interface Row {
  /** The RPC, as in the proto; a variant in parentheses. */
  readonly rpc: string;
  readonly service: "ws" | "turns";
  readonly method: string;
  readonly request: (f: Fixtures) => Promise<unknown> | unknown;
  /** The request sent, of what `request` made (default: all of it). */
  readonly wire?: (request: unknown) => unknown;
  readonly expect: Record<Caller, string>;
  /** Server streaming: the outcome is the first message (or the failure). */
  readonly stream?: boolean;
  /** A stream that yields only once something happens: done (repeatedly) until it yields. */
  readonly trigger?: (f: Fixtures, request: unknown) => Promise<void>;
  /** Reads a stream until this says stop (default: the first message). */
  readonly until?: (message: unknown, f: Fixtures, request: unknown) => boolean;
  /** What the caller saw, appended to OK (e.g. which repositories, whether paths are shown). */
  readonly note?: (responses: unknown[], f: Fixtures) => string;
}

const made = new WeakMap<Fixtures, Map<string, Promise<unknown>>>();
/** A fixture made once per suite (its fixtures), for rows whose calls change nothing. */
function onceFor<T>(f: Fixtures, key: string, make: () => Promise<T>): Promise<T> {
  const mine = made.get(f) ?? new Map<string, Promise<unknown>>();
  made.set(f, mine);
  if (!mine.has(key)) mine.set(key, make());
  return mine.get(key) as Promise<T>;
}

/** Files of the base commit a DeleteFile row may delete, one per call. */
const DELETABLE = 10;

const pathNote = (p: string) => (p === "" ? "environment_path hidden" : "environment_path shown");

/** The rows: every RPC of both services (checked against the descriptors below). */
const ROWS: Row[] = [
  {
    rpc: "RegisterRepository (an existing name)",
    service: "ws",
    method: "registerRepository",
    request: () => ({ name: "matrix" }),
    expect: { owner: "ALREADY_EXISTS REPOSITORY_EXISTS", granted: "ALREADY_EXISTS REPOSITORY_EXISTS", ungranted: NOT_GRANTED, withdrawn: NOT_GRANTED, admin: "ALREADY_EXISTS REPOSITORY_EXISTS", none: NO_TOKEN },
  },
  {
    rpc: "ListRepositories",
    service: "ws",
    method: "listRepositories",
    request: () => ({}),
    expect: { owner: "OK: matrix", granted: "OK: elsewhere, matrix", ungranted: "OK: elsewhere", withdrawn: "OK: elsewhere", admin: "OK: elsewhere, matrix; source_path shown", none: NO_TOKEN },
    note: ([r]) => {
      const repos = (r as { repositories: { name: string; sourcePath: string }[] }).repositories;
      const names = repos.map((x) => x.name).filter((n) => n === "matrix" || n === "elsewhere").sort();
      return `${names.join(", ")}${repos.some((x) => x.sourcePath !== "") ? "; source_path shown" : ""}`;
    },
  },
  { rpc: "CreateWorkspace", service: "ws", method: "createWorkspace", request: (f) => ({ repoId: f.repoId, mode: WorkspaceMode.EPHEMERAL }), expect: REPOSITORY },
  {
    rpc: "CreateWorkspace (joining alice's changeset)",
    service: "ws",
    method: "createWorkspace",
    request: async (f) => ({ repoId: f.repoId, mode: WorkspaceMode.EPHEMERAL, changesetId: (await f.session()).changesetId }),
    expect: { owner: OK, granted: "PERMISSION_DENIED CHANGESET_NOT_JOINABLE", ungranted: NOT_GRANTED, withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  { rpc: "GetWorkspace", service: "ws", method: "getWorkspace", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "DestroyWorkspace", service: "ws", method: "destroyWorkspace", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "ListSessions", service: "ws", method: "listSessions", request: (f) => ({ repoId: f.repoId }), expect: REPOSITORY },
  { rpc: "CountActive", service: "ws", method: "countActive", request: (f) => ({ repoId: f.repoId }), expect: REPOSITORY },
  {
    rpc: "TransitionChangeset",
    service: "ws",
    method: "transitionChangeset",
    request: async (f) => ({ changesetId: (await f.session()).changesetId, toState: ChangesetState.SUBMITTED }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  {
    // Under the repository's independent_review (on by default): the author is refused, an admin not on it decides.
    rpc: "TransitionChangeset (to APPROVED, independent review)",
    service: "ws",
    method: "transitionChangeset",
    request: async (f) => ({ changesetId: (await f.verifying()).changesetId, toState: ChangesetState.APPROVED }),
    expect: { owner: INDEPENDENT, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  {
    rpc: "TransitionChangeset (to MERGED, into main)",
    service: "ws",
    method: "transitionChangeset",
    request: async (f) => ({ changesetId: (await f.approved()).changesetId, toState: ChangesetState.MERGED, targetRef: "main" }),
    expect: { owner: INDEPENDENT, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  {
    rpc: "UpdateRepository",
    service: "ws",
    method: "updateRepository",
    request: (f) => ({ repositoryId: f.repoId, independentReview: true }),
    expect: { owner: ADMIN_ONLY, granted: ADMIN_ONLY, ungranted: ADMIN_ONLY, withdrawn: ADMIN_ONLY, admin: OK, none: NO_TOKEN },
  },
  {
    rpc: "CommitChangeset",
    service: "ws",
    method: "commitChangeset",
    request: async (f) => ({ changesetId: (await f.changed()).changesetId, message: "matrix" }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  { rpc: "Heartbeat", service: "ws", method: "heartbeat", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "AttachSession", service: "ws", method: "attachSession", stream: true, request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "StrandSession", service: "ws", method: "strandSession", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  {
    rpc: "ResumeSession (agent_id alice)",
    service: "ws",
    method: "resumeSession",
    request: async (f) => ({ deadSessionId: await f.stranded(), agentId: "alice" }),
    expect: { owner: OK, granted: "PERMISSION_DENIED AGENT_MISMATCH", ungranted: "PERMISSION_DENIED AGENT_MISMATCH", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  { rpc: "AbandonSession", service: "ws", method: "abandonSession", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "WatchEvents (repo_ids: matrix)", service: "ws", method: "watchEvents", stream: true, request: (f) => ({ repoIds: [f.repoId] }), expect: REPOSITORY },
  {
    rpc: "WatchEvents (every repository)",
    service: "ws",
    method: "watchEvents",
    stream: true,
    // Four sessions are created, in matrix, elsewhere, matrix, elsewhere: a caller who reads up to
    // the third or the fourth has been offered every event before it, so what it saw is all it may see.
    request: async (f) => ({ sentinels: await f.sentinels() }),
    wire: () => ({}),
    until: (m, _f, req) => {
      const s = (req as { sentinels: string[] }).sentinels;
      const sessionId = (m as { event: { sessionId: string } }).event.sessionId;
      return sessionId === s[2] || sessionId === s[3];
    },
    expect: { owner: "OK: matrix", granted: "OK: elsewhere, matrix", ungranted: "OK: elsewhere", withdrawn: "OK: elsewhere", admin: "OK: elsewhere, matrix", none: NO_TOKEN },
    note: (ms, f) => [...new Set(ms.map((m) => f.repoNames.get((m as { event: { repoId: string } }).event.repoId) ?? "(other)"))].sort().join(", "),
  },
  { rpc: "WriteFile", service: "ws", method: "writeFile", request: async (f) => ({ sessionId: (await f.session()).sessionId, path: `notes-${f.unique()}.txt`, content: new TextEncoder().encode("hi\n") }), expect: SESSION },
  { rpc: "DeleteFile", service: "ws", method: "deleteFile", request: async (f) => ({ sessionId: (await f.session()).sessionId, path: `del-${f.unique() % DELETABLE}.txt`, expectedHash: f.readmeHash }), expect: SESSION },
  { rpc: "ReadFile", service: "ws", method: "readFile", request: async (f) => ({ sessionId: (await f.session()).sessionId, path: "README.md" }), expect: SESSION },
  { rpc: "ListFiles", service: "ws", method: "listFiles", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "ClaimSymbols", service: "ws", method: "claimSymbols", request: async (f) => ({ sessionId: (await f.session()).sessionId, symbols: [{ path: `src/claimed-${f.unique()}.ts`, symbol: "" }] }), expect: SESSION },
  { rpc: "ReleaseSymbols", service: "ws", method: "releaseSymbols", request: async (f) => ({ sessionId: (await f.session()).sessionId, symbols: [{ path: "src/a.ts", symbol: "alpha" }] }), expect: SESSION },
  { rpc: "ListClaims", service: "ws", method: "listClaims", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  { rpc: "DescribeOtherModifiers", service: "ws", method: "describeOtherModifiers", request: (f) => ({ repoId: f.repoId, path: "README.md" }), expect: REPOSITORY },
  { rpc: "DiffWorkspace", service: "ws", method: "diffWorkspace", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
  {
    rpc: "DiffChangeset",
    service: "ws",
    method: "diffChangeset",
    request: async (f) => ({ changesetId: (await f.session()).changesetId }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  { rpc: "ListChangesets", service: "ws", method: "listChangesets", request: (f) => ({ repoId: f.repoId }), expect: REPOSITORY },
  {
    rpc: "GetChangeset",
    service: "ws",
    method: "getChangeset",
    request: async (f) => ({ changesetId: (await f.session()).changesetId }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  // A check is a command the server runs: only an admin sets one (here: clears it, which changes nothing).
  {
    rpc: "SetRepositoryCheck",
    service: "ws",
    method: "setRepositoryCheck",
    request: (f) => ({ repositoryId: f.repoId }),
    expect: { owner: "PERMISSION_DENIED ROLE_REQUIRED", granted: "PERMISSION_DENIED ROLE_REQUIRED", ungranted: "PERMISSION_DENIED ROLE_REQUIRED", withdrawn: "PERMISSION_DENIED ROLE_REQUIRED", admin: OK, none: NO_TOKEN },
  },
  {
    rpc: "ListVerifications",
    service: "ws",
    method: "listVerifications",
    request: async (f) => ({ changesetId: (await f.session()).changesetId }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  // A prefix names only ids the caller may act on: to anyone else it names nothing (and tells nothing).
  {
    rpc: "ResolveIdPrefix (the first 8 characters of alice's session id)",
    service: "ws",
    method: "resolveIdPrefix",
    request: async (f) => ({ kind: IdKind.SESSION, prefix: (await f.session()).sessionId.slice(0, 8) }),
    expect: { owner: "OK: named", granted: "OK: nothing named", ungranted: "OK: nothing named", withdrawn: "OK: nothing named", admin: "OK: named", none: NO_TOKEN },
    note: ([r]) => ((r as { ids: string[] }).ids.length > 0 ? "named" : "nothing named"),
  },
  {
    rpc: "ResolveIdPrefix (of alice's changeset)",
    service: "ws",
    method: "resolveIdPrefix",
    request: async (f) => ({ kind: IdKind.CHANGESET, prefix: (await f.session()).changesetId.slice(0, 8) }),
    expect: { owner: "OK: named", granted: "OK: nothing named", ungranted: "OK: nothing named", withdrawn: "OK: nothing named", admin: "OK: named", none: NO_TOKEN },
    note: ([r]) => ((r as { ids: string[] }).ids.length > 0 ? "named" : "nothing named"),
  },
  {
    rpc: "ResolveIdPrefix (of alice's turn)",
    service: "ws",
    method: "resolveIdPrefix",
    // One turn for every call (a read changes nothing): a running turn each would fill the pool.
    request: async (f) => ({ kind: IdKind.TURN, prefix: (await onceFor(f, "turn", () => f.turn())).turnId.slice(0, 8) }),
    expect: { owner: "OK: named", granted: "OK: nothing named", ungranted: "OK: nothing named", withdrawn: "OK: nothing named", admin: "OK: named", none: NO_TOKEN },
    note: ([r]) => ((r as { ids: string[] }).ids.length > 0 ? "named" : "nothing named"),
  },
  {
    rpc: "ResolveIdPrefix (of a comment on alice's changeset)",
    service: "ws",
    method: "resolveIdPrefix",
    request: async (f) => ({ kind: IdKind.COMMENT, prefix: (await onceFor(f, "comment", () => f.comment())).commentId.slice(0, 8) }),
    expect: { owner: "OK: named", granted: "OK: nothing named", ungranted: "OK: nothing named", withdrawn: "OK: nothing named", admin: "OK: named", none: NO_TOKEN },
    note: ([r]) => ((r as { ids: string[] }).ids.length > 0 ? "named" : "nothing named"),
  },
  // Review comments: whoever may read the changeset (DiffChangeset's rule).
  {
    rpc: "AddComment",
    service: "ws",
    method: "addComment",
    request: async (f) => ({ changesetId: (await f.session()).changesetId, path: "README.md", line: 1, body: "matrix" }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  {
    rpc: "ListComments",
    service: "ws",
    method: "listComments",
    request: async (f) => ({ changesetId: (await onceFor(f, "comment", () => f.comment())).changesetId }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  {
    rpc: "ResolveComment",
    service: "ws",
    method: "resolveComment",
    request: async (f) => ({ commentId: (await f.comment()).commentId }),
    expect: { owner: OK, granted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", ungranted: "PERMISSION_DENIED NOT_CHANGESET_OWNER", withdrawn: NOT_GRANTED, admin: OK, none: NO_TOKEN },
  },
  { rpc: "RebaseWorkspace", service: "ws", method: "rebaseWorkspace", request: async (f) => ({ sessionId: (await f.session()).sessionId, onto: "HEAD" }), expect: SESSION },
  {
    rpc: "BeginTurn",
    service: "turns",
    method: "beginTurn",
    request: async (f) => ({ sessionId: (await f.session()).sessionId }),
    expect: { ...SESSION, owner: "OK: environment_path hidden", admin: "OK: environment_path shown" },
    note: ([r]) => pathNote((r as { environmentPath: string }).environmentPath),
  },
  {
    // A client that must work in the directory (berth run): refused before anything begins, whoever owns the session.
    rpc: "BeginTurn (require_environment_path)",
    service: "turns",
    method: "beginTurn",
    request: async (f) => ({ sessionId: (await f.session()).sessionId, requireEnvironmentPath: true }),
    expect: { owner: "PERMISSION_DENIED ROLE_REQUIRED", granted: "PERMISSION_DENIED ROLE_REQUIRED", ungranted: "PERMISSION_DENIED ROLE_REQUIRED", withdrawn: "PERMISSION_DENIED ROLE_REQUIRED", admin: "OK: environment_path shown", none: NO_TOKEN },
    note: ([r]) => pathNote((r as { environmentPath: string }).environmentPath),
  },
  {
    rpc: "EndTurn",
    service: "turns",
    method: "endTurn",
    request: async (f) => ({ turnId: (await f.turn()).turnId, outcome: TurnOutcome.COMPLETED }),
    expect: { ...SESSION, owner: "OK: environment_path hidden", admin: "OK: environment_path shown" },
    note: ([r]) => pathNote((r as { turn: { environmentPath: string } }).turn.environmentPath),
  },
  { rpc: "CancelTurn", service: "turns", method: "cancelTurn", request: async (f) => ({ turnId: (await f.turn()).turnId }), expect: SESSION },
  { rpc: "TurnHeartbeat", service: "turns", method: "turnHeartbeat", request: async (f) => ({ turnId: (await f.turn()).turnId }), expect: SESSION },
  { rpc: "ListTurns", service: "turns", method: "listTurns", request: async (f) => ({ sessionId: (await f.turn()).sessionId }), expect: SESSION },
  {
    rpc: "WatchTurns",
    service: "turns",
    method: "watchTurns",
    stream: true,
    request: async (f) => ({ sessionId: (await f.session()).sessionId }),
    // The stream is live only: turns are begun on the session until the watcher has seen one.
    trigger: async (f, req) => {
      await f.beginTurnAsAdmin((req as { sessionId: string }).sessionId);
    },
    expect: SESSION,
  },
  {
    rpc: "GetPoolStats",
    service: "turns",
    method: "getPoolStats",
    request: () => ({}),
    expect: { owner: "PERMISSION_DENIED ROLE_REQUIRED", granted: "PERMISSION_DENIED ROLE_REQUIRED", ungranted: "PERMISSION_DENIED ROLE_REQUIRED", withdrawn: "PERMISSION_DENIED ROLE_REQUIRED", admin: OK, none: NO_TOKEN },
  },
  { rpc: "GetWorkspaceMap", service: "turns", method: "getWorkspaceMap", request: async (f) => ({ sessionId: (await f.session()).sessionId }), expect: SESSION },
];

const DOC = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../docs/security.md");
const BEGIN = "<!-- access-matrix:begin (generated by test/e2e/access-matrix.test.ts; BERTH_WRITE_DOCS=1 rewrites it) -->";
const END = "<!-- access-matrix:end -->";

/** The matrix as a markdown table. */
export function renderMatrix(outcomes: ReadonlyMap<string, Record<Caller, string>>): string {
  const head = `| RPC | ${CALLERS.map((c) => HEADINGS[c]).join(" | ")} |`;
  const rule = `|${" --- |".repeat(CALLERS.length + 1)}`;
  const lines = ROWS.map((r) => {
    const o = outcomes.get(r.rpc)!;
    return `| ${r.service === "ws" ? "WorkspaceService" : "TurnService"}.${r.rpc} | ${CALLERS.map((c) => o[c].replace(/\|/g, "\\|")).join(" | ")} |`;
  });
  return [head, rule, ...lines].join("\n");
}

for (const instances of [1, 2]) {
  const suite = instances === 1 ? (name: string, f: () => void) => describe(name, f) : needs({ postgres: true });
  suite(instances === 1 ? "the access matrix" : "the access matrix on two instances (each call to the next; turn RPCs forwarded)", () => {
  let berth: TestBerth;
  let fixtures: Fixtures;
  const clients = new Map<string, Clients>();
  const closers: (() => void)[] = [];
  const clientsOf = (caller: Caller, port: Port): Clients => clients.get(`${caller}/${port}`)!;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-matrix-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.owner), agent_id: "alice", roles: ["agent"], repos: ["matrix"] },
        { sha256: sha(TOKENS.granted), agent_id: "bob", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.ungranted), agent_id: "carol", roles: ["agent"], repos: ["elsewhere"] },
        // The same agent as the owner, holding a token whose grants leave the owner's repository out.
        { sha256: sha(TOKENS.withdrawn), agent_id: "alice", roles: ["agent"], repos: ["elsewhere"] },
        { sha256: sha(TOKENS.admin), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ instances, env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") } });
    const rotation = clusterAt(berth.server.grpcAddress);

    for (const caller of CALLERS) {
      const authorization = caller === "none" ? undefined : `Bearer ${TOKENS[caller]}`;
      const metadata: Record<string, string> = authorization ? { authorization } : {};
      const ws = createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata });
      const turns = createGrpcClient(TurnService, berth.server.grpcAddress, { metadata });
      closers.push(() => ws.close(), () => turns.close());
      clients.set(`${caller}/grpc`, { ws: ws, turns: turns });
      const auth: Interceptor = (next) => (req) => {
        if (authorization) req.header.set("authorization", authorization);
        return next(req);
      };
      const connectTo = (baseUrl: string) => createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [auth] });
      const transport = rotation ? rotatingTransport(rotation, rotation.httpUrls.map(connectTo)) : connectTo(berth.server.httpUrl);
      clients.set(`${caller}/connect`, { ws: createClient(WorkspaceService, transport), turns: createClient(TurnService, transport) });
    }

    // A git repository: README.md and a TypeScript file with a symbol.
    const src = path.join(dir, "src-repo");
    mkdirSync(path.join(src, "src"), { recursive: true });
    writeFileSync(path.join(src, "README.md"), "# matrix\n");
    for (let i = 0; i < DELETABLE; i++) writeFileSync(path.join(src, `del-${i}.txt`), "# matrix\n");
    writeFileSync(path.join(src, "src/a.ts"), "export function alpha(): number {\n  return 1;\n}\n");
    const git = (...args: string[]) => execFileSync("git", ["-C", src, ...args], { stdio: "pipe" });
    git("init", "-q", "-b", "main");
    git("add", ".");
    git("-c", "user.email=m@example.com", "-c", "user.name=m", "commit", "-qm", "base");

    const ops = clientsOf("admin", "grpc");
    const alice = clientsOf("owner", "grpc");
    const { repository } = await ops.ws.registerRepository({ name: "matrix", sourcePath: src });
    const { repository: elsewhere } = await ops.ws.registerRepository({ name: "elsewhere", sourcePath: src });
    const repoId = repository!.id;
    const session = async () => {
      const { workspace } = await alice.ws.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT });
      return { sessionId: workspace!.sessionId, changesetId: workspace!.changesetId };
    };
    const probe = await session();
    const readmeHash = (await alice.ws.readFile({ sessionId: probe.sessionId, path: "README.md" })).hash;
    let counter = 0;
    const changed = async () => {
      const s = await session();
      await alice.ws.writeFile({ sessionId: s.sessionId, path: `landed-${counter++}.txt`, content: new TextEncoder().encode("landed\n"), expectedHash: "" });
      return s;
    };
    fixtures = {
      unique: () => counter++,
      changed,
      async verifying() {
        const s = await session();
        for (const toState of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING]) await alice.ws.transitionChangeset({ changesetId: s.changesetId, toState });
        return s;
      },
      async approved() {
        const s = await changed();
        for (const toState of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING]) await alice.ws.transitionChangeset({ changesetId: s.changesetId, toState });
        // "matrix" requires independent review (the default): the approval is an admin's, not its author's.
        await ops.ws.transitionChangeset({ changesetId: s.changesetId, toState: ChangesetState.APPROVED });
        return s;
      },
      repoId,
      elsewhereId: elsewhere!.id,
      readmeHash,
      repoNames: new Map([[repoId, "matrix"], [elsewhere!.id, "elsewhere"]]),
      session,
      async turn() {
        const { sessionId } = await session();
        const { turnId } = await alice.turns.beginTurn({ sessionId });
        return { sessionId, turnId };
      },
      async comment() {
        const { changesetId } = await session();
        const { comment } = await alice.ws.addComment({ changesetId, body: "matrix" });
        return { changesetId, commentId: comment!.id };
      },
      async stranded() {
        const { sessionId } = await session();
        await alice.ws.strandSession({ sessionId, reason: "matrix" });
        return sessionId;
      },
      async sentinels() {
        const out: string[] = [];
        for (const id of [repoId, elsewhere!.id, repoId, elsewhere!.id]) {
          const { workspace } = await ops.ws.createWorkspace({ repoId: id, mode: WorkspaceMode.EPHEMERAL, agentId: id === repoId ? "alice" : "carol" });
          out.push(workspace!.sessionId);
        }
        return out;
      },
      async beginTurnAsAdmin(sessionId) {
        await ops.turns.beginTurn({ sessionId });
      },
    };
  }, 120_000);
  afterAll(async () => {
    for (const c of closers) c();
    await berth?.close();
  });

  /** One call: "OK[: note]" or "CODE REASON". */
  async function outcome(row: Row, caller: Caller, port: Port): Promise<string> {
    const request = await row.request(fixtures);
    const c = clientsOf(caller, port)[row.service] as unknown as Record<string, (req: unknown, opts?: unknown) => unknown>;
    const wire = row.wire ? row.wire(request) : request;
    try {
      let responses: unknown[];
      if (!row.stream) {
        responses = [await (c[row.method]!(wire))];
      } else {
        responses = await readStream(row, c[row.method]!.bind(c), wire, request);
      }
      return row.note ? `${OK}: ${row.note(responses, fixtures)}` : OK;
    } catch (err) {
      const f = rpcFailure(err);
      return `${f.code} ${f.reason ?? "(no reason)"}`;
    }
  }

  /** The messages of a stream up to row.until (default: the first); fails the way the stream fails. */
  async function readStream(row: Row, open: (req: unknown, opts?: unknown) => unknown, wire: unknown, request: unknown): Promise<unknown[]> {
    const abort = new AbortController();
    const stream = open(wire, { signal: abort.signal }) as AsyncIterable<unknown>;
    const it = stream[Symbol.asyncIterator]();
    const out: unknown[] = [];
    let first: Promise<IteratorResult<unknown>> | undefined = it.next();
    try {
      if (row.trigger) {
        // Trigger until the first message (or the failure) arrives.
        let settled = false;
        void first.then(() => (settled = true), () => (settled = true));
        while (!settled) {
          await row.trigger(fixtures, request);
          await Promise.race([first.then(() => undefined, () => undefined), new Promise((r) => setTimeout(r, 200))]);
        }
      }
      for (;;) {
        const r = await (first ?? it.next());
        first = undefined;
        if (r.done) throw new Error(`${row.rpc}: the stream ended before its outcome was known`);
        out.push(r.value);
        if (!row.until || row.until(r.value, fixtures, request)) return out;
      }
    } finally {
      abort.abort();
      await it.return?.().catch(() => undefined);
    }
  }

  it("covers every RPC of both services", () => {
    const listed = new Set(ROWS.map((r) => `${r.service}.${r.method}`));
    const all = [
      ...WorkspaceService.methods.map((m) => `ws.${m.localName}`),
      ...TurnService.methods.map((m) => `turns.${m.localName}`),
    ];
    expect(all.filter((m) => !listed.has(m))).toEqual([]);
  });

  it("answers every RPC as the matrix says, the same on both ports, and docs/security.md shows that matrix", { timeout: 300_000 }, async () => {
    const got = new Map<string, Record<Caller, string>>();
    const mismatches: string[] = [];
    for (const row of ROWS) {
      const cells = {} as Record<Caller, string>;
      for (const caller of CALLERS) {
        const byPort: Record<Port, string> = { grpc: "", connect: "" };
        for (const port of PORTS) byPort[port] = await outcome(row, caller, port);
        if (byPort.grpc !== byPort.connect) mismatches.push(`${row.rpc} as ${caller}: gRPC ${byPort.grpc}, Connect ${byPort.connect}`);
        cells[caller] = byPort.grpc;
      }
      got.set(row.rpc, cells);
    }
    expect(mismatches).toEqual([]);
    const expected = new Map(ROWS.map((r) => [r.rpc, r.expect]));
    expect(renderMatrix(got)).toBe(renderMatrix(expected));

    const doc = readFileSync(DOC, "utf8");
    const table = `${BEGIN}\n${renderMatrix(got)}\n${END}`;
    const section = new RegExp(`${escape(BEGIN)}[\\s\\S]*?${escape(END)}`);
    if (process.env.BERTH_WRITE_DOCS === "1") writeFileSync(DOC, doc.replace(section, table));
    else expect(section.exec(doc)?.[0], "docs/security.md's matrix is stale: run this test with BERTH_WRITE_DOCS=1").toBe(table);
    if (instances > 1) {
      // The turn RPCs of a session held by the other instance went there, and were checked there too.
      const forwarded = berth.instanceLogs.map((own) => own.filter((l) => l.msg === "rpc" && typeof l.forwardedTo === "string").length);
      expect(forwarded.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    }
  });

  it("streams env.evicted to an agent without the environment's directory, to an admin with it", async () => {
    const { sessionId, turnId } = await fixtures.turn();
    const evicted = (caller: Caller) => {
      const abort = new AbortController();
      const stream = clientsOf(caller, "connect").ws.watchEvents({ repoIds: [fixtures.repoId], kinds: ["env.evicted"] }, { signal: abort.signal });
      return (async () => {
        try {
          for await (const m of stream) if (m.event?.sessionId === sessionId && m.event.payload.case === "environmentEvicted") return m.event.payload.value;
          throw new Error("stream ended");
        } finally {
          abort.abort();
        }
      })();
    };
    // Replayed from the outbox too: the subscriptions may start after the eviction.
    await clientsOf("owner", "grpc").turns.endTurn({ turnId, outcome: TurnOutcome.COMPLETED });
    await clientsOf("owner", "grpc").ws.destroyWorkspace({ sessionId });
    const [agent, admin] = await Promise.all([evicted("owner"), evicted("admin")]);
    expect(agent).toMatchObject({ environmentPath: "", reason: "session-ended" });
    expect(admin.environmentPath).not.toBe("");
  });

  it("writes one audit line per refusal and per admin action on another agent's session", async () => {
    const { sessionId } = await fixtures.session();
    await expect(clientsOf("granted", "grpc").ws.getWorkspace({ sessionId })).rejects.toThrow();
    await clientsOf("admin", "connect").ws.strandSession({ sessionId, reason: "audit" });
    const audit = berth.logs.filter((l) => l.msg === "audit" && (l.target as Record<string, string> | undefined)?.session_id === sessionId);
    expect(audit).toEqual([
      expect.objectContaining({ audit: "permission_denied", method: "/berth.v1.WorkspaceService/GetWorkspace", code: "PERMISSION_DENIED", principal: { agentId: "bob", roles: ["agent"], anonymous: false } }),
      expect.objectContaining({ audit: "admin_action", method: "/berth.v1.WorkspaceService/StrandSession", code: "OK", principal: { agentId: "ops", roles: ["agent", "admin"], anonymous: false }, target: expect.objectContaining({ session_id: sessionId, agent_id: "alice" }) }),
    ]);
  });
  });
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
