/**
 * Starts both transports over one set of registrations and one Pipeline:
 * - grpc-js on grpcAddr (gRPC, HTTP/2),
 * - connect-node on httpAddr (Connect, gRPC-Web and gRPC; HTTP/1.1 and h2), after the web console's
 *   route and the MCP server's (/mcp, ./mcp-route.ts),
 * each with health and reflection (v1 + v1alpha) added, TLS when configured, and a graceful
 * shutdown: stop accepting, let calls finish for graceMs, then end what is left with
 * UNAVAILABLE "server shutting down" and close every connection.
 */
import * as grpc from "@grpc/grpc-js";
import http from "node:http";
import http2 from "node:http2";
import net, { type Socket } from "node:net";
import { readFileSync } from "node:fs";
import type { Logger } from "pino";
import type { Config, ListenAddress } from "../config.js";
import type { ServiceRegistration } from "../api/handler.js";
import type { Authenticator } from "../auth/principal.js";
import type { RpcObserver } from "../observability/rpc-observer.js";
import { Pipeline } from "./pipeline.js";
import type { CallLimitSettings } from "./call-limits.js";
import { ABORT_SHUTDOWN } from "./status.js";
import { addToGrpcServer } from "./grpc-bridge.js";
import { connectHandler } from "./connect-routes.js";
import { Health, healthRegistration, type HealthState } from "./health.js";
import { reflectionRegistrations } from "./reflection.js";
import { consoleRoute } from "../console/serve.js";
import { mcpHttpRoute } from "./mcp-route.js";

export interface TransportOptions {
  readonly grpcAddr: ListenAddress;
  readonly httpAddr: ListenAddress;
  readonly tls: Config["tls"];
  readonly services: readonly ServiceRegistration[];
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  readonly health: HealthState;
  /** Largest request message either port reads (grpc-js default 4 MiB; Connect's unbounded); must exceed BERTH_MAX_FILE_BYTES plus the envelope. */
  readonly maxReceiveMessageBytes?: number;
  /** Sees every RPC at completion (metrics, tracing). */
  readonly observer?: RpcObserver;
  /** Bind now, serve later: calls fail UNAVAILABLE SERVER_STARTING until `open()` (build's start-up). */
  readonly startClosed?: boolean;
  /** Per-agent fair use (./call-limits.ts). */
  readonly limits?: CallLimitSettings;
  /** Sees every request to /mcp once answered (metrics). */
  readonly mcpObserver?: { mcpRequest(method: string, tool: string, status: number, seconds: number): void };
}

export interface Transports {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly pipeline: Pipeline;
  /** Graceful: calls may finish within graceMs; then streams end with UNAVAILABLE and connections close. */
  shutdown(graceMs: number): Promise<void>;
}

/** Services exempt from authentication. */
export const PUBLIC_SERVICES: ReadonlySet<string> = new Set([Health.typeName]);

/** The /mcp body cap when the server sets no RPC cap (tests' bare transports). */
const DEFAULT_MCP_BODY_BYTES = 64 * 1024 * 1024;

/** How long, after aborting what is left at the grace deadline, statuses get to reach clients. */
const FLUSH_MS = 500;

function hostPort(a: ListenAddress, port = a.port): string {
  return a.host.includes(":") ? `[${a.host}]:${port}` : `${a.host}:${port}`;
}

function grpcCredentials(tls: Config["tls"]): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  const ca = tls.clientCa !== undefined ? readFileSync(tls.clientCa) : null;
  return grpc.ServerCredentials.createSsl(
    ca,
    [{ cert_chain: readFileSync(tls.cert), private_key: readFileSync(tls.key) }],
    tls.clientCa !== undefined,
  );
}

function bindGrpc(server: grpc.Server, addr: string, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(addr, creds, (err, port) => (err ? reject(err) : resolve(port)));
  });
}

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0", "latin1");

/** Routes a cleartext connection by its first bytes: the h2c preface → http2, else HTTP/1.1. */
function sniff(sock: Socket, h1: http.Server, h2: http2.Http2Server): void {
  let seen: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const isH2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isH2 && n < H2_PREFACE.length) return; // need more bytes to decide
    sock.off("data", onData);
    sock.pause();
    sock.unshift(seen);
    if (isH2) {
      // http2 picks up the buffered bytes itself (socket.readableLength); do not resume.
      h2.emit("connection", sock);
    } else {
      h1.emit("connection", sock);
      sock.resume();
    }
  };
  sock.on("data", onData);
  sock.on("error", () => sock.destroy());
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

export async function startTransports(opts: TransportOptions): Promise<Transports> {
  const { logger } = opts;
  const base = [...opts.services, healthRegistration(opts.health)];
  const registrations = [...base, ...reflectionRegistrations(base.map((r) => r.service))];
  const pipeline = new Pipeline({ authenticator: opts.authenticator, logger, startClosed: opts.startClosed ?? false, ...(opts.limits ? { limits: opts.limits } : {}), ...(opts.observer ? { observer: opts.observer } : {}) });

  // gRPC (grpc-js)
  const grpcServer = new grpc.Server({
    "grpc.enable_channelz": 0,
    ...(opts.maxReceiveMessageBytes !== undefined ? { "grpc.max_receive_message_length": opts.maxReceiveMessageBytes } : {}),
  });
  addToGrpcServer(grpcServer, registrations, pipeline, PUBLIC_SERVICES);
  const grpcPort = await bindGrpc(grpcServer, hostPort(opts.grpcAddr), grpcCredentials(opts.tls));

  // Connect / gRPC-Web / gRPC (connect-node) on HTTP/1.1 + h2
  const connect = connectHandler(registrations, pipeline, PUBLIC_SERVICES, opts.maxReceiveMessageBytes);
  // The web console (GET / and /console/*) and the MCP server (/mcp) answer first; every other request is an RPC.
  const serveConsole = consoleRoute();
  const mcpObserver = opts.mcpObserver;
  const serveMcp = mcpHttpRoute({
    registrations,
    pipeline,
    publicServices: PUBLIC_SERVICES,
    logger,
    maxBodyBytes: opts.maxReceiveMessageBytes ?? DEFAULT_MCP_BODY_BYTES,
    ...(mcpObserver ? { served: (method: string, tool: string, status: number, seconds: number) => mcpObserver.mcpRequest(method, tool, status, seconds) } : {}),
  });
  const handler: typeof connect = (req, res) => {
    if (!serveConsole(req, res) && !serveMcp(req, res)) connect(req, res);
  };
  const tls = opts.tls;
  const sessions = new Set<http2.ServerHttp2Session>();
  const sockets = new Set<Socket>();
  const trackSocket = (sock: Socket): void => {
    sockets.add(sock);
    sock.once("close", () => sockets.delete(sock));
  };
  const trackSession = (s: http2.ServerHttp2Session): void => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  };
  let httpServer: net.Server;
  if (tls === undefined) {
    // Node 20 has no allowHTTP1 for cleartext HTTP/2: sniff the h2c preface and hand the
    // socket to an HTTP/2 or an HTTP/1.1 server, both with the same Connect handler.
    const h2 = http2.createServer({}, handler);
    const h1 = http.createServer(handler);
    h1.keepAliveTimeout = 5_000;
    h2.on("session", trackSession);
    httpServer = net.createServer((sock) => {
      trackSocket(sock);
      sniff(sock, h1, h2);
    });
  } else {
    const secure = http2.createSecureServer(
      {
        allowHTTP1: true,
        cert: readFileSync(tls.cert),
        key: readFileSync(tls.key),
        ...(tls.clientCa !== undefined ? { ca: readFileSync(tls.clientCa), requestCert: true, rejectUnauthorized: true } : {}),
      },
      handler,
    );
    secure.on("session", trackSession);
    secure.on("secureConnection", trackSocket);
    httpServer = secure;
  }
  await new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(opts.httpAddr.port, opts.httpAddr.host, () => {
      httpServer.off("error", reject);
      resolve();
    });
  });
  const address = httpServer.address();
  const httpPort = typeof address === "object" && address !== null ? address.port : opts.httpAddr.port;

  const scheme = tls ? "https" : "http";
  logger.info(
    { grpc: hostPort(opts.grpcAddr, grpcPort), http: `${scheme}://${hostPort(opts.httpAddr, httpPort)}`, tls: tls !== undefined, mtls: tls?.clientCa !== undefined },
    "listening",
  );

  let stopping: Promise<void> | undefined;
  async function shutdown(graceMs: number): Promise<void> {
    const deadline = Date.now() + Math.max(0, graceMs);
    // 1. Stop accepting: no new connections; GOAWAY on existing ones (in-flight streams continue).
    const grpcDone = new Promise<void>((resolve) => grpcServer.tryShutdown(() => resolve()));
    const httpClosed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
    for (const s of sessions) s.close();
    // 2. Calls in flight may finish until the grace deadline.
    const idle = await pipeline.whenIdle(deadline - Date.now());
    // From now on new calls are refused with UNAVAILABLE.
    pipeline.closing = true;
    if (!idle) {
      // 3. Grace is over: streams (and late unary calls) end with UNAVAILABLE "server shutting down".
      logger.info({ inflight: pipeline.inflight.size }, "grace period over; ending calls in flight");
      pipeline.abortAll(ABORT_SHUTDOWN);
      await pipeline.whenIdle(FLUSH_MS);
    }
    // 4. Let the statuses reach clients, then close everything.
    await Promise.race([grpcDone, delay(idle ? Math.max(0, deadline - Date.now()) : FLUSH_MS)]);
    grpcServer.forceShutdown();
    for (const s of sessions) s.close();
    await Promise.race([
      Promise.all([...sessions].map((s) => new Promise<void>((r) => (s.closed ? r() : s.once("close", () => r()))))),
      delay(FLUSH_MS),
    ]);
    for (const s of sessions) s.destroy();
    for (const sock of sockets) sock.destroy();
    await httpClosed;
    logger.info("transports stopped");
  }

  return {
    grpcPort,
    httpPort,
    pipeline,
    shutdown: (graceMs) => (stopping ??= shutdown(graceMs)),
  };
}
