/**
 * Starts a real Berth on free ports, on a fresh database, with real clients for both transports.
 *
 * With BERTH_TEST_INSTANCES=2 (`npm run test:two-instances`; or `instances: 2`) it starts two
 * servers on the one PostgreSQL database, with distinct instance names, and the clients send each
 * call to the next instance, round robin (test/support/instances.ts): the promise checked is that
 * instances behind a per-call load balancer behave as one. `server` is the first instance (for the
 * suites that read a server's internals), `servers` all of them; `stop()` and `close()` stop all.
 * The mode needs PostgreSQL: the second instance opens its own connection pool to the database.
 */
import { randomBytes } from "node:crypto";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import pino, { type Logger } from "pino";
import { loadConfig } from "../../src/config.js";
import { testDataDir, testEnvRoot } from "./env-root.js";
import type { Clock } from "../../src/platform/clock.js";
import type { OpenedDatabase } from "../../src/platform/database.js";
import type { OverlayPort } from "../../src/overlay/overlay-port.js";
import { build, type BerthServer, type BuildOptions } from "../../src/transport/build.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createTestDatabase, type DatabaseKind, type TestDatabase } from "./database.js";
import { createGrpcClient } from "./grpc-client.js";
import { Rotation, TEST_INSTANCES, registerCluster, rotatingTransport, unregisterCluster } from "./instances.js";

export interface TestBerth {
  /** The first instance. */
  readonly server: BerthServer;
  /** Every instance, the first first (one unless BERTH_TEST_INSTANCES says more). */
  readonly servers: readonly BerthServer[];
  readonly database: TestDatabase;
  /** A @grpc/grpc-js client on the gRPC port (each call to the next instance). */
  readonly grpc: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  /** A Connect client (HTTP/1.1, JSON) on the HTTP port (each call to the next instance). */
  readonly connect: Client<typeof WorkspaceService>;
  /** A gRPC-Web client (binary) on the HTTP port (each call to the next instance). */
  readonly grpcWeb: Client<typeof WorkspaceService>;
  /** Log lines the servers wrote, every instance's, in the order written. */
  readonly logs: Record<string, unknown>[];
  /** Log lines of each instance, indexed as `servers`. */
  readonly instanceLogs: readonly Record<string, unknown>[][];
  /** Stops the servers (the database stays, for a restart). */
  stop(): Promise<void>;
  /** Stops the servers and drops the database. */
  close(): Promise<void>;
}

export interface StartOptions {
  readonly kind?: DatabaseKind;
  /** Reuse a database (restart tests); otherwise a fresh one is created. */
  readonly database?: TestDatabase;
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
  /** How many instances on the database; default BERTH_TEST_INSTANCES (1). More than one needs PostgreSQL. */
  readonly instances?: number;
  /** Wraps each instance's real overlay as the one its turn scheduler captures into (test/turns). */
  readonly wrapOverlay?: (real: OverlayPort) => OverlayPort;
  /** Turn pool options beyond the config (test/turns: no sweep timer). */
  readonly turns?: BuildOptions["turns"];
  /** The merge's seam between reading the target ref and moving it (test/landing: TARGET_MOVED). */
  readonly beforeTargetUpdate?: BuildOptions["beforeTargetUpdate"];
  /** Each instance's background fetch of its mirrors, by instance index (test/remote ticks it by hand). */
  readonly mirrorSchedule?: (instance: number) => BuildOptions["mirrorSchedule"];
  /** Watches each instance's mirror fetches and pushes. */
  readonly mirrorProbe?: BuildOptions["mirrorProbe"];
}

/** A pino logger whose lines (parsed) go to each of `sinks`. */
export function captureLogger(...sinks: Record<string, unknown>[][]): Logger {
  return pino(
    { level: "debug" },
    {
      write(line: string) {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        for (const s of sinks) s.push(parsed);
      },
    },
  );
}

/**
 * The ports of the instances of each cluster started, by the first instance's: a cluster
 * restarted with its first instance pinned to the old port (BERTH_HTTP_ADDR=127.0.0.1:<port>)
 * gets every instance on its old port, as a restart behind a load balancer would.
 */
const clusterPorts = new Map<string, number[]>();

/** The listen address of instance `i` (> 0) given the first's `value`: its old port after a pinned restart, else a free one. */
function peerAddress(name: string, value: string | undefined, i: number): string | undefined {
  if (value === undefined) return undefined;
  const m = /^(.*):(\d+)$/.exec(value);
  if (!m || m[2] === "0") return value;
  const old = clusterPorts.get(`${name}:${m[2]}`)?.[i];
  return `${m[1]}:${old ?? 0}`;
}

export async function startBerth(options: StartOptions = {}): Promise<TestBerth> {
  const count = options.instances ?? TEST_INSTANCES;
  const database = options.database ?? (await createTestDatabase(options.kind));
  if (count > 1 && database.kind !== "postgres") {
    if (!options.database) await database.drop();
    throw new Error(`${count} instances on one database need PostgreSQL (a connection each); this database is ${database.kind}: gate the test with needs({ postgres: true })`);
  }
  const baseEnv: Record<string, string> = {
    BERTH_ADDR: "127.0.0.1:0",
    BERTH_HTTP_ADDR: "127.0.0.1:0",
    BERTH_SHUTDOWN_GRACE_MS: "500",
    BERTH_METRICS_ADDR: "127.0.0.1:0",
    BERTH_ENV_ROOT: testEnvRoot(),
    ...options.env,
  };
  // Mirrors of git servers go under the data directory: a fresh one per cluster unless named.
  baseEnv.BERTH_DATA_DIR ??= testDataDir();
  const logs: Record<string, unknown>[] = [];
  const instanceLogs: Record<string, unknown>[][] = [];
  const servers: BerthServer[] = [];
  /** The connection pools opened here for instances after the first (closed at stop). */
  const pools: OpenedDatabase[] = [];
  const cluster = randomBytes(3).toString("hex");
  const stopServers = async () => {
    await Promise.all(servers.map((s) => s.close(200)));
    for (const p of pools.splice(0)) await p.close();
  };
  try {
    for (let i = 0; i < count; i++) {
      const env = i === 0 ? baseEnv : {
        ...baseEnv,
        BERTH_ADDR: peerAddress("grpc", baseEnv.BERTH_ADDR, i)!,
        BERTH_HTTP_ADDR: peerAddress("http", baseEnv.BERTH_HTTP_ADDR, i)!,
        ...(baseEnv.BERTH_METRICS_ADDR === "off" ? {} : { BERTH_METRICS_ADDR: "127.0.0.1:0" }),
        // Each instance its own disk, as on its own machine.
        BERTH_ENV_ROOT: `${loadConfig(baseEnv).envRoot}.instance-${i + 1}`,
        BERTH_DATA_DIR: `${loadConfig(baseEnv).dataDir}.instance-${i + 1}`,
      };
      const config = loadConfig(env);
      const own: Record<string, unknown>[] = [];
      instanceLogs.push(own);
      const opened = i === 0 ? database.opened : await database.reopen();
      if (i > 0) pools.push(opened);
      let real: OverlayPort | undefined;
      const wrapOverlay = options.wrapOverlay;
      const server = await build(config, {
        logger: captureLogger(own, logs),
        database: opened,
        ...(options.clock ? { clock: options.clock } : {}),
        // One instance keeps the default name (hostname:port); several need names of their own.
        ...(count > 1 ? { instanceName: `berth-test-${cluster}-${i + 1}` } : {}),
        ...(wrapOverlay
          ? {
              turnOverlay: {
                writeFile: (input) => real!.writeFile(input),
                deleteFile: (input) => real!.deleteFile(input),
                entries: (w) => real!.entries(w),
                readBase: (w, p) => real!.readBase(w, p),
                usage: (w) => real!.usage(w),
              } satisfies OverlayPort,
            }
          : {}),
        ...(options.turns ? { turns: options.turns } : {}),
        ...(options.beforeTargetUpdate ? { beforeTargetUpdate: options.beforeTargetUpdate } : {}),
        ...(options.mirrorSchedule ? { mirrorSchedule: options.mirrorSchedule(i) } : {}),
        ...(options.mirrorProbe ? { mirrorProbe: options.mirrorProbe } : {}),
      });
      if (wrapOverlay) real = wrapOverlay(server.overlay);
      servers.push(server);
    }
  } catch (err) {
    await stopServers();
    if (!options.database) await database.drop();
    throw err;
  }
  const first = servers[0]!;
  if (count > 1) {
    clusterPorts.set(`grpc:${first.grpcPort}`, servers.map((s) => s.grpcPort));
    clusterPorts.set(`http:${first.httpPort}`, servers.map((s) => s.httpPort));
  }
  const rotation = new Rotation(servers.map((s) => s.grpcAddress), servers.map((s) => s.httpUrl));
  registerCluster(rotation);
  const over = (make: (baseUrl: string) => Transport): Transport =>
    count > 1 ? rotatingTransport(rotation, rotation.httpUrls.map(make)) : make(first.httpUrl);
  const grpc = createGrpcClient(WorkspaceService, first.grpcAddress);
  const connect = createClient(WorkspaceService, over((baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" })));
  const grpcWeb = createClient(WorkspaceService, over((baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "2" })));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    grpc.close();
    unregisterCluster(rotation);
    await stopServers();
  };
  return {
    server: first,
    servers,
    database,
    grpc,
    connect,
    grpcWeb,
    logs,
    instanceLogs,
    stop,
    async close() {
      await stop();
      if (!options.database) await database.drop();
    },
  };
}
