/** A test-only WorkspaceService and a helper to start the transports around it. */
import pino, { type Logger } from "pino";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { BerthError, invalidArgument, notFound } from "../../src/platform/errors.js";
import { registration, type CallContext } from "../../src/api/handler.js";
import type { Principal } from "../../src/auth/principal.js";
import { startTransports, type Transports } from "../../src/transport/transports.js";
import { HealthState } from "../../src/transport/health.js";
import { noAuthenticator, type Authenticator } from "../../src/auth/authenticator.js";
import type { Config } from "../../src/config.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createGrpcClient, type GrpcClient } from "../support/grpc-client.js";

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `cond` until true or `ms` passes (bounded wait, not a timing assumption). */
export async function waitFor(cond: () => boolean, ms = 5000, what = "condition"): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** What the test service observed. */
export class Probe {
  principals: Principal[] = [];
  aborts: unknown[] = [];
  streamProduced = 0;
  streamClosed = 0;
  streamsOpen = 0;
  slowStarted = 0;
}

const unimplemented = (): never => {
  throw new BerthError("unimplemented", "UNIMPLEMENTED", "not implemented in the test service");
};

export function testService(probe: Probe) {
  return registration(WorkspaceService, {
    registerRepository: unimplemented,
    setRepositoryCheck: unimplemented,
    listVerifications: unimplemented,
    listRepositories: unimplemented,
    updateRepository: unimplemented,
    createWorkspace: unimplemented,
    destroyWorkspace: unimplemented,
    listSessions: unimplemented,
    countActive: unimplemented,
    resolveIdPrefix: unimplemented,
    listChangesets: unimplemented,
    getChangeset: unimplemented,
    addComment: unimplemented,
    listComments: unimplemented,
    resolveComment: unimplemented,
    diffWorkspace: unimplemented,
    diffChangeset: unimplemented,
    rebaseWorkspace: unimplemented,
    transitionChangeset: unimplemented,
    commitChangeset: unimplemented,
    writeFile: unimplemented,
    deleteFile: unimplemented,
    readFile: unimplemented,
    listFiles: unimplemented,
    claimSymbols: unimplemented,
    releaseSymbols: unimplemented,
    listClaims: unimplemented,
    describeOtherModifiers: unimplemented,
    heartbeat: unimplemented,
    strandSession: unimplemented,
    resumeSession: unimplemented,
    abandonSession: unimplemented,
    async getWorkspace(req, ctx: CallContext) {
      probe.principals.push(ctx.principal);
      const id = req.sessionId;
      if (id === "bad") {
        throw invalidArgument([
          { field: "session_id", reason: "UUID", description: "must be a UUID" },
          { field: "intent", reason: "TOO_LONG", description: "at most 4096 characters" },
        ]);
      }
      if (id === "missing") throw notFound("SESSION_NOT_FOUND", "session missing not found", { session_id: id });
      if (id === "boom") throw new Error("secret: db password is hunter2");
      if (id === "down") throw new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read");
      if (id === "wait") {
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        probe.aborts.push(ctx.signal.reason);
        throw new Error("handler noticed the abort");
      }
      if (id.startsWith("slow:")) {
        probe.slowStarted++;
        await sleep(Number(id.slice(5)));
      }
      ctx.logFields["extra"] = "x";
      return {
        workspace: {
          sessionId: id,
          agentId: ctx.principal.agentId ?? "",
          intent: ctx.protocol,
          agentName: ctx.requestHeader("x-test") ?? "",
        },
      };
    },
    async *watchEvents(req, ctx) {
      probe.streamsOpen++;
      try {
        const payload = "x".repeat(16 * 1024);
        for (let seq = Number(req.afterSeq) + 1; ; seq++) {
          if (ctx.signal.aborted) return;
          probe.streamProduced++;
          yield { event: { seq: BigInt(seq), kind: "test.tick", reason: payload } };
        }
      } finally {
        probe.streamClosed++;
      }
    },
    async *attachSession(req, _ctx) {
      probe.streamsOpen++;
      try {
        yield { message: { case: "workspace", value: { sessionId: req.sessionId } } };
        // Never ends by itself; deliberately ignores ctx.signal: the pipeline must end it.
        await new Promise(() => undefined);
      } finally {
        probe.streamClosed++;
      }
    },
  });
}

export interface Harness {
  readonly transports: Transports;
  readonly probe: Probe;
  readonly health: HealthState;
  readonly logs: Record<string, unknown>[];
  readonly grpcAddress: string;
  readonly httpUrl: string;
  grpcClient(opts?: Parameters<typeof createGrpcClient>[2]): GrpcClient<typeof WorkspaceService>;
  connect(httpVersion?: "1.1" | "2", headers?: Record<string, string>): Client<typeof WorkspaceService>;
  grpcWeb(httpVersion?: "1.1" | "2"): Client<typeof WorkspaceService>;
  connectGrpc(): Client<typeof WorkspaceService>;
  close(graceMs?: number): Promise<void>;
}

export function captureLogger(logs: Record<string, unknown>[]): Logger {
  return pino({ level: "debug" }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
}

export async function startHarness(
  opts: { authenticator?: Authenticator; tls?: Config["tls"]; grpcCredentials?: grpc.ChannelCredentials } = {},
): Promise<Harness> {
  const probe = new Probe();
  const logs: Record<string, unknown>[] = [];
  const health = new HealthState(["", WorkspaceService.typeName], true);
  const transports = await startTransports({
    grpcAddr: { host: "127.0.0.1", port: 0 },
    httpAddr: { host: "127.0.0.1", port: 0 },
    tls: opts.tls,
    services: [testService(probe)],
    authenticator: opts.authenticator ?? noAuthenticator,
    logger: captureLogger(logs),
    health,
  });
  const grpcAddress = `127.0.0.1:${transports.grpcPort}`;
  const httpUrl = `${opts.tls ? "https" : "http"}://127.0.0.1:${transports.httpPort}`;
  const clients: { close(): void }[] = [];
  return {
    transports,
    probe,
    health,
    logs,
    grpcAddress,
    httpUrl,
    grpcClient(o) {
      const c = createGrpcClient(WorkspaceService, grpcAddress, { credentials: opts.grpcCredentials, ...o });
      clients.push(c);
      return c;
    },
    connect(httpVersion = "1.1", headers) {
      return createClient(
        WorkspaceService,
        createConnectTransport({
          baseUrl: httpUrl,
          httpVersion,
          interceptors: headers
            ? [
                (next) => (req) => {
                  for (const [k, v] of Object.entries(headers)) req.header.set(k, v);
                  return next(req);
                },
              ]
            : [],
        }),
      );
    },
    grpcWeb(httpVersion = "2") {
      return createClient(WorkspaceService, createGrpcWebTransport({ baseUrl: httpUrl, httpVersion }));
    },
    connectGrpc() {
      return createClient(WorkspaceService, createGrpcTransport({ baseUrl: httpUrl }));
    },
    async close(graceMs = 200) {
      for (const c of clients) c.close();
      await transports.shutdown(graceMs);
    },
  };
}

/** Log lines of RPCs (those with a `method` field). */
export function rpcLines(logs: Record<string, unknown>[]): Record<string, unknown>[] {
  return logs.filter((l) => typeof l["method"] === "string");
}
