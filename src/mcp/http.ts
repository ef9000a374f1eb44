/**
 * The MCP server over Streamable HTTP at /mcp on the HTTP port, stateless: each POST gets a new
 * MCP server over the tools (./tools.ts), so no MCP state lives in one instance's memory and
 * any instance behind a per-call balancer answers any request (promise 1). The session a call
 * acts on travels with it (`session_id`, `/mcp?session=` or `X-Berth-Session`).
 *
 * The request is authenticated by the caller given (the server's own authenticator) before the
 * MCP layer sees it: a refusal is the RPC's (same code, reason and message) as HTTP 401 with a
 * JSON-RPC error body. Every tool's RPCs then carry the caller's Authorization header, so each
 * is authorised, logged, metered and traced by the pipeline like any other RPC.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Client } from "@connectrpc/connect";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Logger } from "pino";
import type { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Refusal } from "./refusals.js";
import { createBerthMcpServer } from "./tools.js";

export const MCP_PATH = "/mcp";
/** The header naming the session a request's tools act on, when the URL does not. */
export const SESSION_HEADER = "x-berth-session";
/** Request headers handed on to the tools' RPCs: who the caller is, and the trace it is part of. */
const FORWARDED = ["authorization", "traceparent", "tracestate"] as const;

/** What the route reads of a request, HTTP/1.1's or HTTP/2's compatibility API alike. */
interface Request extends AsyncIterable<unknown> {
  readonly url?: string | undefined;
  readonly method?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** What it uses of a response, either flavour. */
interface Response {
  readonly statusCode: number;
  readonly headersSent: boolean;
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(): unknown;
  end(body: string): unknown;
  once(event: "close", listener: () => void): unknown;
}

export interface McpRouteOptions {
  /** The WorkspaceService as the server's own pipeline serves it. */
  readonly client: Client<typeof WorkspaceService>;
  /** The caller as the RPCs authenticate it: undefined when admitted, else the refusal. */
  authenticate(header: (name: string) => string | undefined): Promise<Refusal | undefined>;
  readonly logger: Logger;
  /** The largest request body read (as the RPC ports' cap). */
  readonly maxBodyBytes: number;
  /** Told of every request once answered (metrics): JSON-RPC method, tool ("" unless tools/call), HTTP status. */
  served?(method: string, tool: string, status: number, seconds: number): void;
}

function isMcpPath(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(MCP_PATH)) return false;
  const next = url.charAt(MCP_PATH.length);
  return next === "" || next === "?" || next === "/";
}

function header(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A JSON-RPC error answer (no MCP session exists yet to answer in). */
function jsonRpcError(res: Response, status: number, code: number, message: string, data?: unknown, extraHeaders: Record<string, string> = {}): void {
  const body = JSON.stringify({ jsonrpc: "2.0", id: null, error: { code, message, ...(data !== undefined ? { data } : {}) } });
  res.writeHead(status, { "content-type": "application/json", ...extraHeaders });
  res.end(body);
}

class BodyTooLarge extends Error {}

async function readBody(req: Request, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** What a request asks, for its log line: the JSON-RPC method(s), and the tool called. */
function described(body: unknown): { mcp: string; tool?: string } {
  const one = (m: unknown): { mcp: string; tool?: string } => {
    const msg = m as { method?: unknown; params?: { name?: unknown } } | null;
    const mcp = typeof msg?.method === "string" ? msg.method : "response";
    return typeof msg?.params?.name === "string" && mcp === "tools/call" ? { mcp, tool: msg.params.name } : { mcp };
  };
  return Array.isArray(body) ? { mcp: body.map((m) => one(m).mcp).join(",") } : one(body);
}

/** The route: answers (and returns true) for /mcp, else returns false. */
export function mcpRoute(opts: McpRouteOptions): (req: Request, res: Response) => boolean {
  return (req, res) => {
    if (!isMcpPath(req.url)) return false;
    void serve(opts, req, res).catch((err: unknown) => {
      opts.logger.error({ err, path: MCP_PATH }, "mcp request failed");
      if (!res.headersSent) jsonRpcError(res, 500, -32603, "internal error");
      else res.end();
    });
    return true;
  };
}

async function serve(opts: McpRouteOptions, req: Request, res: Response): Promise<void> {
  const start = performance.now();
  const log = (fields: { mcp?: string; tool?: string } & Record<string, unknown>) => {
    const seconds = (performance.now() - start) / 1000;
    opts.served?.(fields.mcp ?? "", fields.tool ?? "", res.statusCode, seconds);
    opts.logger.info({ path: MCP_PATH, status: res.statusCode, durationMs: Math.round(seconds * 1e6) / 1000, ...fields }, "mcp");
  };
  const refusal = await opts.authenticate((name) => header(req, name));
  if (refusal !== undefined) {
    const head = `${refusal.code}${refusal.reason ? ` ${refusal.reason}` : ""}: ${refusal.message}`;
    const status = refusal.code === "UNAUTHENTICATED" ? 401 : refusal.code === "PERMISSION_DENIED" ? 403 : 503;
    jsonRpcError(res, status, -32001, head, refusal, status === 401 ? { "www-authenticate": 'Bearer realm="berth"' } : {});
    return log({ code: refusal.code, reason: refusal.reason });
  }
  // Stateless: there is no stream to resume and no MCP session to end.
  if (req.method !== "POST") {
    jsonRpcError(res, 405, -32000, `${req.method ?? "?"} is not served on ${MCP_PATH}: POST JSON-RPC messages (stateless Streamable HTTP)`, undefined, { allow: "POST" });
    return log({ method: req.method });
  }
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req, opts.maxBodyBytes));
  } catch (err) {
    if (err instanceof BodyTooLarge) jsonRpcError(res, 413, -32600, `request body over ${opts.maxBodyBytes} bytes`);
    else if (err instanceof SyntaxError) jsonRpcError(res, 400, -32700, `parse error: ${err.message}`);
    else throw err;
    return log({});
  }
  const url = new URL(req.url ?? MCP_PATH, "http://berth.invalid");
  const session = url.searchParams.get("session") ?? header(req, SESSION_HEADER);
  const headers: Record<string, string> = {};
  for (const name of FORWARDED) {
    const v = header(req, name);
    if (v !== undefined) headers[name] = v;
  }
  const server = createBerthMcpServer({ client: opts.client, callOptions: { headers }, ...(session ? { session } : {}) });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.once("close", () => {
    void server.close();
    log(described(body));
  });
  await server.connect(transport);
  // The SDK reads Node's request and response objects; HTTP/2's compatibility API has what it uses.
  await transport.handleRequest(req as unknown as IncomingMessage, res as unknown as ServerResponse, body);
}
