/**
 * MCP tests' set-up: a real server with token auth (alice, bob), a real git repository, and the
 * MCP SDK's own client over stdio (spawning `berth mcp`, as an agent starts its tools) or over
 * Streamable HTTP (/mcp on the HTTP port).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type StartOptions, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { BIN, cliEnv, ROOT } from "../cli/helpers.js";
import { gitRepo, type Repo } from "../landing/helpers.js";

/** alice and bob are agents; ops (admin) registers the repository (a server-side source path needs the admin role). */
export const TOKENS = { alice: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };
export type Agent = keyof typeof TOKENS;
const sha = (t: string) => createHash("sha256").update(t).digest("hex");

export interface McpWorld {
  readonly berth: TestBerth;
  readonly repo: Repo;
  readonly repoName: string;
  /** A gRPC client on the first instance, as `who` (or with no token). */
  grpc(who: Agent | "nobody"): ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
}

/** A server with token auth for alice and bob, and a repository both may use. */
export async function mcpWorld(options: Pick<StartOptions, "instances" | "kind"> = {}): Promise<McpWorld> {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-mcp-"));
  const file = path.join(dir, "tokens.json");
  writeFileSync(file, JSON.stringify({ tokens: (Object.keys(TOKENS) as Agent[]).map((a) => ({ sha256: sha(TOKENS[a]), agent_id: a, roles: a === "ops" ? ["agent", "admin"] : ["agent"], repos: ["*"] })) }));
  const berth = await startBerth({ ...options, env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") } });
  const grpc = (who: Agent | "nobody") =>
    createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: who === "nobody" ? {} : { authorization: `Bearer ${TOKENS[who]}` } });
  const repo = gitRepo();
  const repoName = `mcp-${randomBytes(3).toString("hex")}`;
  await grpc("ops").registerRepository({ name: repoName, sourcePath: repo.dir });
  return { berth, repo, repoName, grpc };
}

/** The SDK's client over Streamable HTTP at `httpUrl`/mcp, as `who` (no token for "nobody"). */
export async function overHttp(httpUrl: string, who: Agent | "nobody", query = ""): Promise<Client> {
  const headers: Record<string, string> = who === "nobody" ? {} : { authorization: `Bearer ${TOKENS[who]}` };
  const client = new Client({ name: "berth-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${httpUrl}/mcp${query}`), { requestInit: { headers } }));
  return client;
}

/** The SDK's client over stdio: `berth mcp` spawned as a child, as an agent starts its tools. */
export async function overStdio(httpUrl: string, who: Agent | "nobody", args: readonly string[] = []): Promise<Client> {
  const env = cliEnv({ BERTH_SERVER: httpUrl, ...(who === "nobody" ? {} : { BERTH_TOKEN: TOKENS[who] }) });
  const client = new Client({ name: "berth-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", ...args], cwd: ROOT, env: env as Record<string, string>, stderr: "pipe" }));
  return client;
}

/** A tool's text answer, parsed as the JSON it is; fails the test on a tool error. */
export async function tool<T = Record<string, unknown>>(client: Client, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  expect(r.isError ?? false, `${name} answered an error: ${text}`).toBe(false);
  return JSON.parse(text) as T;
}

/** A tool's refusal: its text (the test fails if the tool did not refuse). */
export async function refusal(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  expect(r.isError, `${name} was expected to refuse, answered: ${text}`).toBe(true);
  return text;
}

/**
 * A test that spawns processes (berth mcp, the inspector) or runs a whole agent scenario, whose
 * first write also starts the symbol parser: on a loaded 2-core machine it has taken 20 s.
 */
/**
 * A describe block's world and the MCP clients it opens through `connect`: the world started before
 * its tests; every client, then the world, closed after them.
 */
export function mcpSuite<A extends unknown[]>(connect: (...args: A) => Promise<Client>, options: Parameters<typeof mcpWorld>[0] = {}) {
  const clients: Client[] = [];
  const suite = {
    world: undefined as unknown as McpWorld,
    async open(...args: A): Promise<Client> {
      const c = await connect(...args);
      clients.push(c);
      return c;
    },
  };
  beforeAll(async () => {
    suite.world = await mcpWorld(options);
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await suite.world?.berth.close();
  });
  return suite;
}

export const SCENARIO_TIMEOUT_MS = 120_000;

export const TOOL_NAMES = [
  "claim_symbols",
  "create_session",
  "delete_file",
  "describe_other_modifiers",
  "diff_workspace",
  "get_session",
  "list_claims",
  "list_comments",
  "list_files",
  "read_file",
  "release_symbols",
  "resolve_comment",
  "resume_session",
  "submit",
  "write_file",
];
