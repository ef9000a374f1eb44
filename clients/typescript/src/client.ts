/**
 * createBerthClient: the two services over one transport (Connect, gRPC-Web or gRPC), with the
 * bearer token, a default deadline on unary calls, retries of idempotent calls (idempotent.ts),
 * a resuming events() iterator and a session hold().
 */
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { Event } from "../../../gen/berth/v1/event_pb.js";
import { TurnService } from "../../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../../gen/berth/v1/workspace_service_pb.js";
import { resumingEvents, type EventsOptions, type EventsRequest } from "./events.js";
import { holdSession, type HoldOptions, type SessionHold } from "./hold.js";
import { retryInterceptor, type RetryOptions } from "./retry.js";

export type Protocol = "connect" | "grpc-web" | "grpc";

export interface BerthClientOptions {
  /** The server: http(s)://host:port — the HTTP port (BERTH_HTTP_ADDR) for connect and grpc-web, the gRPC port (BERTH_ADDR) for grpc. */
  readonly baseUrl: string;
  /** Default "connect". */
  readonly protocol?: Protocol;
  /** Sent as "authorization: Bearer …" when auth is on. */
  readonly token?: string;
  /** The deadline of a unary call that sets none, in milliseconds (default 30000; 0: none). Retries happen within it. */
  readonly timeoutMs?: number;
  /** Retries of idempotent unary calls (default: 4 attempts). */
  readonly retry?: RetryOptions;
  /** Run after the client's own (the token, retries). */
  readonly interceptors?: readonly Interceptor[];
}

export interface BerthClient {
  readonly baseUrl: string;
  readonly transport: Transport;
  readonly workspaces: Client<typeof WorkspaceService>;
  readonly turns: Client<typeof TurnService>;
  /** WatchEvents, resumed after a disconnect from the last seq yielded (events.ts). */
  events(request?: EventsRequest, options?: EventsOptions): AsyncGenerator<Event>;
  /** Keeps a session connected until close() (hold.ts). */
  hold(sessionId: string, options?: HoldOptions): SessionHold;
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

function transportFor(options: BerthClientOptions, interceptors: Interceptor[]): Transport {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  switch (options.protocol ?? "connect") {
    case "connect":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors });
    case "grpc":
      return createGrpcTransport({ baseUrl, interceptors });
  }
}

/** The service's client, its unary methods given timeoutMs unless the call sets one (streams have none). */
function withDeadline<S extends DescService>(service: S, transport: Transport, timeoutMs: number): Client<S> {
  const client = createClient(service, transport) as Record<string, (req: unknown, opts?: { timeoutMs?: number }) => unknown>;
  if (timeoutMs <= 0) return client as Client<S>;
  const out: Record<string, unknown> = {};
  for (const method of service.methods) {
    const call = client[method.localName]!;
    out[method.localName] = method.methodKind === "unary" ? (req: unknown, opts?: { timeoutMs?: number }) => call(req, { timeoutMs, ...opts }) : call;
  }
  return out as Client<S>;
}

export function createBerthClient(options: BerthClientOptions): BerthClient {
  const interceptors = [...(options.token ? [bearer(options.token)] : []), retryInterceptor(options.retry), ...(options.interceptors ?? [])];
  const transport = transportFor(options, interceptors);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const workspaces = withDeadline(WorkspaceService, transport, timeoutMs);
  const turns = withDeadline(TurnService, transport, timeoutMs);
  return {
    baseUrl: options.baseUrl,
    transport,
    workspaces,
    turns,
    events: (request = {}, eventsOptions = {}) => resumingEvents(workspaces, request, eventsOptions),
    hold: (sessionId, holdOptions = {}) => holdSession(workspaces, sessionId, holdOptions),
  };
}
