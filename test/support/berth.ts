/** Starts a real Berth on free ports, on a fresh database, with real clients for both transports. */
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import pino, { type Logger } from "pino";
import { loadConfig } from "../../src/config.js";
import type { Clock } from "../../src/platform/clock.js";
import { build, type BerthServer } from "../../src/transport/build.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createTestDatabase, type DatabaseKind, type TestDatabase } from "./database.js";
import { createGrpcClient } from "./grpc-client.js";

export interface TestBerth {
  readonly server: BerthServer;
  readonly database: TestDatabase;
  /** A @grpc/grpc-js client on the gRPC port. */
  readonly grpc: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  /** A Connect client (HTTP/1.1, JSON) on the HTTP port. */
  readonly connect: Client<typeof WorkspaceService>;
  /** A gRPC-Web client (binary) on the HTTP port. */
  readonly grpcWeb: Client<typeof WorkspaceService>;
  /** Log lines the server wrote. */
  readonly logs: Record<string, unknown>[];
  /** Stops the server (the database stays, for a restart). */
  stop(): Promise<void>;
  /** Stops the server and drops the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly kind?: DatabaseKind;
  /** Reuse a database (restart tests); otherwise a fresh one is created. */
  readonly database?: TestDatabase;
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
}

export function captureLogger(logs: Record<string, unknown>[]): Logger {
  return pino(
    { level: "debug" },
    {
      write(line: string) {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      },
    },
  );
}

export async function startBerth(options: StartOptions = {}): Promise<TestBerth> {
  const database = options.database ?? (await createTestDatabase(options.kind));
  const config = loadConfig({
    BERTH_ADDR: "127.0.0.1:0",
    BERTH_HTTP_ADDR: "127.0.0.1:0",
    BERTH_SHUTDOWN_GRACE_MS: "500",
    BERTH_METRICS_ADDR: "127.0.0.1:0",
    ...options.env,
  });
  const logs: Record<string, unknown>[] = [];
  const server = await build(config, {
    logger: captureLogger(logs),
    database: database.opened,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const grpc = createGrpcClient(WorkspaceService, server.grpcAddress);
  const connect = createClient(WorkspaceService, createConnectTransport({ baseUrl: server.httpUrl, httpVersion: "1.1" }));
  const grpcWeb = createClient(WorkspaceService, createGrpcWebTransport({ baseUrl: server.httpUrl, httpVersion: "2" }));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    grpc.close();
    await server.close(200);
  };
  return {
    server,
    database,
    grpc,
    connect,
    grpcWeb,
    logs,
    stop,
    async close() {
      await stop();
      if (!options.database) await database.drop();
    },
  };
}
