/**
 * build(): a started Berth — database opened and migrated, registry loaded, both transports
 * listening — and its orderly shutdown. Tests start the real thing on free ports through it.
 */
import { assertEnvRootOutsideRepositories } from "../turns/env-git.js";
import type { Logger } from "pino";
import { createAuthenticator } from "../auth/authenticator.js";
import type { CallLimits } from "./call-limits.js";
import { advertiseAddress, type Config } from "../config.js";
import { systemClock, type Clock } from "../platform/clock.js";
import { createLogger } from "../platform/logger.js";
import { registerClaimRules } from "../claims/claim-rules.js";
import { UnitOfWork } from "../platform/unit-of-work.js";
import { BerthError } from "../platform/errors.js";
import { lockInstanceName } from "../platform/instance-lock.js";
import path from "node:path";
import { WorkspaceRegistry } from "../sessions/registry.js";
import { RepositoryLocations, type Scheduler } from "../repository/locations.js";
import type { MirrorProbe } from "../repository/mirror.js";
import { LifecycleManager, defaultInstanceName } from "../sessions/lifecycle.js";
import { OverlayService } from "../overlay/overlay-service.js";
import { Landing } from "../overlay/landing.js";
import { Verifier } from "../verification/verifier.js";
import { EventHub } from "../delivery/hub.js";
import type { NatsRelay } from "../delivery/nats-relay.js";
import { EventPruner } from "../delivery/pruner.js";
import { registration } from "../api/handler.js";
import { workspaceHandlers } from "../api/workspace-service.js";
import { turnHandlers } from "../api/turn-service.js";
import { FORWARDED_TURN_METHODS } from "../api/turn-routing.js";
import type { OverlayPort } from "../overlay/overlay-port.js";
import { WorkspaceMapService } from "../turns/map/index.js";
import { TurnScheduler } from "../turns/scheduler.js";
import { keptCommitMessages } from "../turns/store.js";
import type { Environment } from "../turns/environment.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { openDatabase, type OpenedDatabase } from "../platform/database.js";
import { migrateToLatest } from "../platform/migrate.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { HealthState } from "./health.js";
import { BerthMetrics } from "../observability/metrics/metrics.js";
import { startMetricsServer, type MetricsServer } from "../observability/metrics/http.js";
import type { SpanExport } from "../observability/tracing/span-export.js";
import { RpcTracer, observers } from "../observability/tracing/rpc-tracer.js";
import { startTransports } from "./transports.js";
import { GrpcForwarder, forwarderCredentials } from "./forwarder.js";

export interface BuildOptions {
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** An already opened database (tests share one); otherwise opened from the config and closed on shutdown. */
  readonly database?: OpenedDatabase;
  /** Stable name of this instance across restarts (startup reconcile); default hostname:grpc-port. */
  readonly instanceName?: string;
  /** Replaces the overlay the turn scheduler captures into and materialises from (tests). */
  readonly turnOverlay?: OverlayPort;
  /** Turn pool options beyond the config (tests: no sweep timer). */
  readonly turns?: {
    readonly sweepIntervalMs?: number;
    readonly probeTimeoutMs?: number;
    /** Replaces the liveness probe of a parked environment (tests wrap the real one to watch it). */
    readonly probe?: (env: Environment) => Promise<boolean>;
  };
  /** Test seam of a merge (src/overlay/landing.ts): runs between reading the target ref and moving it. */
  readonly beforeTargetUpdate?: (gitDir: string, targetRef: string) => Promise<void>;
  /** Runs the mirrors' background fetch (tests tick it by hand); default a timer every BERTH_MIRROR_FETCH_INTERVAL_MS. */
  readonly mirrorSchedule?: Scheduler;
  /** Watches the mirrors' fetches and pushes (tests). */
  readonly mirrorProbe?: MirrorProbe;
}

export interface BerthServer {
  readonly grpcPort: number;
  readonly httpPort: number;
  /** host:port of the gRPC listener. */
  readonly grpcAddress: string;
  /** host:port other instances forward this instance's turn RPCs to (BERTH_ADVERTISE_ADDR), as written in its instances row. */
  readonly advertiseAddress: string;
  /** This incarnation's id (its instances row). */
  readonly instanceId: string;
  /** BERTH_DATA_DIR: this instance's own files (its mirrors of repositories on git servers). */
  readonly dataDir: string;
  /** http(s)://host:port of the Connect listener. */
  readonly httpUrl: string;
  readonly registry: WorkspaceRegistry;
  readonly database: OpenedDatabase;
  readonly health: HealthState;
  readonly logger: Logger;
  /** Event delivery (src/delivery/): the hub feeds WatchEvents and AttachSession notices. */
  readonly events: EventHub;
  /** The NATS relay, when NATS_URL is set. */
  readonly relay: NatsRelay | undefined;
  readonly pruner: EventPruner;
  /** The session lifecycle: GC loop, strand/resume/abandon, reconcile (src/sessions/lifecycle.ts). */
  readonly lifecycle: LifecycleManager;
  /** The workspace overlay and claims (src/overlay/): the OverlayPort the turn scheduler uses. */
  readonly overlay: OverlayService;
  /** The turn scheduler: environments, the pool, steering (src/turns/). */
  readonly turns: TurnScheduler;
  /** Prometheus metrics of this server (its own registry; src/metrics/). */
  readonly metrics: BerthMetrics;
  /** http://host:port/metrics, unless BERTH_METRICS_ADDR=off. */
  readonly metricsUrl: string | undefined;
  /** Span export (this server's OpenTelemetry tracer provider and OTLP exporter), when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  readonly spanExporter: SpanExport | undefined;
  /** Per-agent calls and streams in flight on this instance (BERTH_MAX_CALLS_PER_AGENT, src/transport/call-limits.ts). */
  readonly callLimits: CallLimits;
  /** Graceful shutdown: stop accepting, let unary calls finish, end streams, close the database. */
  close(graceMs?: number): Promise<void>;
}

const DB_PROBE_INTERVAL_MS = 5_000;
/** The in-process followers consume synchronously, so their feed rarely buffers; a burst (a 100,000-row reconcile elsewhere) may. */
const COMMIT_FEED_BUFFER = { maxBufferedEvents: 200_000, maxBufferedBytes: 64 * 1024 * 1024 };

export async function build(config: Config, options: BuildOptions = {}): Promise<BerthServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // Before anything opens: environments are git checkouts, and one nested in another
  // repository's work tree would have git in it see that repository.
  await assertEnvRootOutsideRepositories(config.envRoot);
  const clock = options.clock ?? systemClock;
  const health = new HealthState();
  const ownsDatabase = options.database === undefined;
  const database = options.database ?? (await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir }));
  const closers: (() => Promise<void>)[] = [];
  try {
    logger.info({ database: database.kind, location: database.location, ...(database.seededFromTemplate ? { seededFromTemplate: true } : {}) }, "database opened");
    if (database.initdbBecause !== undefined) {
      logger.warn({ location: database.location, why: database.initdbBecause }, "new embedded database made by PGlite's initdb, not from the migrated template (a slow first start); `npm run -s pglite:template` remakes the template");
    }
    await migrateToLatest(database.db, (name) => logger.info({ migration: name }, "migration applied"));
    const metrics = new BerthMetrics({ db: database.db, logger, relayStream: config.natsUrl ? config.natsStream : undefined });
    closers.push(() => metrics.stop());

    // Event delivery: the hub reads the outbox, nudged by local commits, notified of every
    // instance's (LISTEN on its own connection, PostgreSQL only), and polling as a safety net.
    let relay: NatsRelay | undefined;
    const events = new EventHub({ db: database.db, logger, listenUrl: database.url, pollIntervalMs: config.eventPollMs, onNotified: (head) => relay?.notified(head) });
    await events.start();
    closers.push(() => events.stop());
    metrics.sources.events = events;
    const instanceId = crypto.randomUUID();
    // Every state change goes through the unit of work; after each commit it wakes delivery and
    // hands the events to the in-process followers (registry, overlay, turns).
    const uow = new UnitOfWork(database.db, logger, (numbered) => {
      events.nudge(numbered);
      relay?.nudge(numbered !== undefined);
    });
    // Repositories on a git server: this instance's mirrors, under its own data directory.
    const locations = new RepositoryLocations({
      mirrorRoot: path.join(config.dataDir, "mirrors"),
      access: { timeoutMs: config.remoteTimeoutMs, httpHeaderFile: config.gitHttpHeaderFile },
      fetchIntervalMs: config.mirrorFetchIntervalMs,
      schedule: options.mirrorSchedule,
      log: logger,
      probe: options.mirrorProbe,
    });
    const registry = new WorkspaceRegistry({ uow, clock, logger, instanceId, locations });
    // This instance's stable name: known once the gRPC port is bound (the default is host:port).
    const identity: { name?: string; readonly staleAfterMs: number } = { staleAfterMs: 0 };
    // How BeginTurn names this instance to a client that must run where its environments are.
    const self = { instanceId, name: "", address: "" };
    registerClaimRules(registry.hooks, { releaseOnSubmit: config.releaseClaimsOnSubmit });
    // Lifecycle: reconcile orphaned workspaces (stranded, before SERVING), then load ours.
    const lifecycle = new LifecycleManager({
      registry,
      clock,
      logger,
      metrics,
      settings: {
        leaseMs: config.sessionLeaseMs,
        pinNonTerminal: config.pinNonTerminal,
        gcIntervalMs: config.gcIntervalMs,
        idleTtlSeconds: config.idleTtlSeconds,
        maxTtlSeconds: config.maxTtlSeconds,
        strandedTtlSeconds: config.strandedTtlSeconds,
        reconcileSlices: database.setParallelism,
      },
    });
    // The overlay: caches made on first use; the modifiers index follows every instance's events.
    const overlay = new OverlayService({ registry, clock, logger, settings: { maxFileBytes: config.maxFileBytes, maxOverlayFiles: config.maxOverlayFiles, maxOverlayBytes: config.maxOverlayBytes } });
    closers.push(async () => overlay.close());
    const authenticator = createAuthenticator(config.auth, (message, err) => logger.warn({ err }, message));
    closers.push(async () => authenticator.close?.());
    for (const w of authenticator.startupWarnings ?? []) logger.warn({ auth: config.auth.mode }, w);
    // `events` is read by src/api/event-handlers.ts (EventServiceDeps).
    // A changeset's default commit message goes on with its agents' own commit messages, which the turns keep.
    const landing = new Landing({ registry, clock, refPrefix: config.commitRefPrefix, beforeTargetUpdate: options.beforeTargetUpdate, agentMessages: keptCommitMessages, baseTree: (source, commit) => overlay.git.tree(source, commit) });
    // Checks on VERIFYING: run in fresh directories under the data directory, which (with the environments) the check cannot see.
    const verifier = new Verifier({
      registry,
      landing,
      clock,
      logger,
      root: path.join(config.dataDir, "verifications"),
      hide: [config.dataDir, config.envRoot],
      instance: {
        id: instanceId,
        get name() {
          return identity.name;
        },
        staleAfterMs: lifecycle.staleAfterMs,
      },
      // As often as an instance can be found dead (a third of the staleness), as the turns' dead-owner sweep.
      sweepIntervalMs: Math.max(1000, Math.floor(lifecycle.staleAfterMs / 3)),
    });
    const serviceDeps = { registry, lifecycle, events, overlay, landing, verifier };
    // Turns: environments under BERTH_ENV_ROOT, the pool, and the workspace map (off the critical path).
    const maps = new WorkspaceMapService({
      logger,
      config: { maxDepth: config.mapMaxDepth, maxEntries: config.mapMaxEntries, budgetMs: config.mapBudgetMs, ttlMs: config.mapTtlMs },
    });
    closers.push(() => maps.close());
    metrics.instrumentMaps(maps);
    const { probe: turnProbe, ...turnSettings } = options.turns ?? {};
    const turns = new TurnScheduler({
      ...(turnProbe ? { probe: turnProbe } : {}),
      registry,
      overlay: options.turnOverlay ?? overlay,
      maps,
      clock,
      logger,
      settings: { root: config.envRoot, idleTtlMs: config.envIdleTtlMs, approvalTtlMs: config.envApprovalTtlMs, poolMax: config.envPoolMax, spares: config.envSpares, maxFileBytes: config.maxFileBytes, shutdownGraceMs: config.shutdownGraceMs, ...turnSettings },
      instances: Object.assign(identity, { staleAfterMs: lifecycle.staleAfterMs }),
    });
    // The OTLP exporter and the NATS client are loaded only when configured: their modules are a
    // few hundred ms of a start that uses neither (npm start's default).
    const spanExporter = config.otlp
      ? new (await import("../observability/tracing/span-export.js")).SpanExport({ endpoint: config.otlp.endpoint, headers: config.otlp.headers, serviceName: config.otlp.serviceName, serviceInstanceId: instanceId, logger })
      : undefined;
    if (spanExporter) closers.push(() => spanExporter.shutdown());
    // Turn RPCs reaching this instance for a session whose environment another holds go there.
    const forwarder = new GrpcForwarder({ instanceId, credentials: forwarderCredentials(config.tls), logger });
    closers.push(async () => forwarder.close());
    // The ports are bound before anything changes state, closed to calls until the start-up
    // below is done: a second server started by mistake on a taken address fails here, before
    // its reconcile could strand the running server's sessions.
    const transports = await startTransports({
      grpcAddr: config.grpcAddr,
      httpAddr: config.httpAddr,
      tls: config.tls,
      services: [registration(WorkspaceService, workspaceHandlers({ ...serviceDeps, captures: turns })), registration(TurnService, turnHandlers({ registry, events, turns, forwarder, self }), { keepRequestBytes: FORWARDED_TURN_METHODS })],
      // Twice BERTH_MAX_FILE_BYTES plus an envelope: a WriteFile over the file limit (up to twice
      // it) is read and refused by the handler as FILE_TOO_LARGE, with ErrorInfo, logged and
      // counted, instead of a bare transport error; the cap still bounds what one call buffers.
      maxReceiveMessageBytes: 2 * config.maxFileBytes + 1024 * 1024,
      authenticator,
      logger,
      health,
      observer: observers(metrics, new RpcTracer(spanExporter?.tracer)),
      mcpObserver: metrics,
      startClosed: true,
      limits: { maxCallsPerAgent: config.maxCallsPerAgent, maxStreamsPerAgent: config.maxStreamsPerAgent },
    });
    closers.push(() => transports.shutdown(config.shutdownGraceMs));
    let metricsServer: MetricsServer | undefined;
    if (config.metricsAddr) {
      metricsServer = await startMetricsServer(metrics, config.metricsAddr, logger);
      const started = metricsServer;
      closers.push(() => started.close());
    }

    // Start-up proper: refused while an instance of the same name runs; orphans reconciled.
    // The default name is host and bound gRPC port (BERTH_ADDR may ask for port 0).
    const instanceName = options.instanceName ?? config.instanceName ?? defaultInstanceName(transports.grpcPort);
    if (ownsDatabase && database.kind === "postgres" && config.databaseUrl) {
      const nameLock = await lockInstanceName(config.databaseUrl, instanceName, (err) =>
        logger.error({ err, instanceName }, "the instance-name lock's connection failed: another process may now start under this name"),
      );
      if (!nameLock) {
        throw new BerthError("failed_precondition", "INSTANCE_NAME_IN_USE", `an instance named "${instanceName}" is running on this database; stop it, or give this one another BERTH_INSTANCE_NAME`, { instance_name: instanceName });
      }
      closers.push(() => nameLock.release());
    }
    identity.name = instanceName;
    self.name = instanceName;
    await lifecycle.startup(instanceName);
    // Where the others reach this instance, now that the port is bound (BERTH_ADDR may say 0).
    const advertised = advertiseAddress(config, transports.grpcPort);
    await lifecycle.advertise(advertised);
    self.address = advertised;
    // Other instances' commits reach the same followers; subscribed before the registry loads, so
    // nothing committed after the load is missed.
    const feed = uow.follow((signal) => events.watch({}, signal, COMMIT_FEED_BUFFER));
    closers.push(() => feed.stop());
    await registry.load();
    metrics.sources.registry = registry;
    overlay.startSymbolWorkers();
    lifecycle.start();
    closers.push(() => lifecycle.stop());
    await turns.start();
    closers.push(() => turns.stop());
    await verifier.start();
    closers.push(() => verifier.stop());
    locations.start();
    closers.push(async () => locations.stop());
    metrics.sources.turns = turns;
    metrics.start();

    if (config.natsUrl) {
      const { NatsRelay, leaderLockFor } = await import("../delivery/nats-relay.js");
      relay = new NatsRelay({
        db: database.db,
        logger,
        natsUrl: config.natsUrl,
        stream: config.natsStream,
        encoding: config.natsEncoding,
        retentionSeconds: config.eventRetentionSeconds,
        // Local commits nudge it, other instances' reach it through the hub's LISTEN (onNotified): the poll is the safety net.
        pollIntervalMs: config.eventPollMs,
        leader: leaderLockFor(database.db, database.kind, config.natsStream, logger),
        onPublished: () => metrics.relayPublished(),
      });
      metrics.sources.relay = relay;
      relay.start();
      const started = relay;
      closers.push(() => started.stop());
    }
    const pruner = new EventPruner({
      db: database.db,
      clock,
      logger,
      retentionSeconds: config.eventRetentionSeconds,
      relayStream: config.natsUrl ? config.natsStream : undefined,
    });
    pruner.start();
    closers.push(() => pruner.stop());

    // Readiness follows the database: a lost connection turns health NOT_SERVING until it returns.
    let databaseUp = true;
    const probe = setInterval(() => {
      database.db
        .selectNoFrom((eb) => eb.val(1).as("one"))
        .execute()
        .then(
          () => {
            if (!databaseUp) logger.info("database reachable again; health SERVING");
            databaseUp = true;
            setServing(health, true);
          },
          (err: unknown) => {
            if (databaseUp) logger.error({ err }, "database unreachable; health NOT_SERVING");
            databaseUp = false;
            setServing(health, false);
          },
        );
    }, DB_PROBE_INTERVAL_MS);
    probe.unref();
    transports.pipeline.open();
    setServing(health, true);

    const tlsScheme = config.tls ? "https" : "http";
    const server: BerthServer = {
      grpcPort: transports.grpcPort,
      httpPort: transports.httpPort,
      grpcAddress: `${hostForUrl(config.grpcAddr.host)}:${transports.grpcPort}`,
      advertiseAddress: advertised,
      instanceId,
      dataDir: config.dataDir,
      httpUrl: `${tlsScheme}://${hostForUrl(config.httpAddr.host)}:${transports.httpPort}`,
      registry,
      database,
      health,
      logger,
      events,
      relay,
      pruner,
      lifecycle,
      overlay,
      turns,
      metrics,
      metricsUrl: metricsServer?.url,
      spanExporter,
      callLimits: transports.pipeline.limits,
      async close(graceMs = config.shutdownGraceMs) {
        clearInterval(probe);
        setServing(health, false);
        // Calls in flight finish while everything behind them still runs; then the rest stops
        // in the reverse of the order it started.
        await transports.shutdown(graceMs);
        for (const stop of closers.reverse()) await stop();
        if (ownsDatabase) await database.close();
        logger.info("stopped");
      },
    };
    logger.info({ grpc: server.grpcAddress, http: server.httpUrl }, "berth serving");
    return server;
  } catch (err) {
    // Starting failed: undo what started, log what cannot be undone, and report the first failure.
    const undo = (e: unknown) => logger.warn({ err: e }, "cleanup after a failed start failed");
    for (const close of closers.reverse()) await close().catch(undo);
    if (ownsDatabase) await database.close().catch(undo);
    throw err;
  }
}

function setServing(health: HealthState, serving: boolean): void {
  health.setServing("", serving);
  health.setServing(WorkspaceService.typeName, serving);
  health.setServing(TurnService.typeName, serving);
}

function hostForUrl(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
