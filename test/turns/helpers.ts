/**
 * A real Berth (real PostgreSQL, real directories) with TurnService and WorkspaceService clients:
 * startBerth's, so BERTH_TEST_INSTANCES=2 makes it two instances, each call to the next one.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Clock } from "../../src/platform/clock.js";
import type { OverlayPort } from "../../src/overlay/overlay-port.js";
import type { Environment } from "../../src/turns/environment.js";
import type { BerthServer } from "../../src/transport/build.js";
import { startBerth } from "../support/berth.js";
import type { TestDatabase } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";

export interface TurnBerth {
  /** The first instance. */
  readonly server: BerthServer;
  /** Every instance (one unless BERTH_TEST_INSTANCES says more). */
  readonly servers: readonly BerthServer[];
  readonly database: TestDatabase;
  readonly ws: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  readonly turns: ReturnType<typeof createGrpcClient<typeof TurnService>>;
  /** The first instance's BERTH_ENV_ROOT (instance n's is `<envRoot>.instance-n`). */
  readonly envRoot: string;
  /** Every instance's log lines. */
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

export interface TurnBerthOptions {
  readonly env?: Record<string, string>;
  readonly clock?: Clock;
  /** Wraps the server's real overlay (e.g. to make some captures fail). */
  readonly wrapOverlay?: (real: OverlayPort) => OverlayPort;
  readonly database?: TestDatabase;
  /** The instance's stable name (several instances in one test: distinct names, or each start would reconcile the others as its earlier incarnation). */
  readonly instanceName?: string;
  /** How many instances (default BERTH_TEST_INSTANCES): 1 for a test of one process's pool by design. */
  readonly instances?: number;
  /** Replaces the liveness probe of parked environments (a test wraps the real one to watch it). */
  readonly probe?: (env: Environment) => Promise<boolean>;
}

export async function startTurnBerth(options: TurnBerthOptions = {}): Promise<TurnBerth> {
  const envRoot = mkdtempSync(path.join(tmpdir(), "berth-envs-"));
  const berth = await startBerth({
    ...(options.instances !== undefined ? { instances: options.instances } : {}),
    env: { BERTH_ENV_ROOT: envRoot, ...(options.instanceName ? { BERTH_INSTANCE_NAME: options.instanceName } : {}), ...options.env },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.database ? { database: options.database } : {}),
    wrapOverlay: options.wrapOverlay ?? ((real) => real),
    turns: { sweepIntervalMs: 0, ...(options.probe ? { probe: options.probe } : {}) },
    ...(options.instanceName ? { instanceName: options.instanceName } : {}),
  });
  const ws = createGrpcClient(WorkspaceService, berth.server.grpcAddress);
  const turns = createGrpcClient(TurnService, berth.server.grpcAddress);
  return {
    server: berth.server,
    servers: berth.servers,
    database: berth.database,
    ws,
    turns,
    envRoot,
    logs: berth.logs,
    async close() {
      ws.close();
      turns.close();
      await berth.close();
      rmSync(envRoot, { recursive: true, force: true });
      for (let i = 1; i < berth.servers.length; i++) rmSync(`${envRoot}.instance-${i + 1}`, { recursive: true, force: true });
    },
  };
}

/** A git repository with `files` files spread over a few directories, committed. */
export function makeGitRepo(files = 20): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-src-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "t@example.com");
  git("config", "user.name", "t");
  for (let i = 0; i < files; i++) {
    const sub = path.join(dir, `pkg${i % 10}`, `mod${i % 7}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, `file${i}.ts`), `export const v${i} = ${i};\n`);
  }
  writeFileSync(path.join(dir, "README.md"), "# fixture\n");
  git("add", "-A");
  git("commit", "-q", "-m", "fixture");
  return dir;
}

let repoSeq = 0;

/** Registers `source` and creates a persistent workspace; returns its session and workspace ids. */
export async function newSession(b: TurnBerth, source: string | undefined, agentId = "agent-a"): Promise<{ sessionId: string; workspaceId: string }> {
  const repo = await b.ws.registerRepository({ name: `repo-${process.pid}-${++repoSeq}`, sourcePath: source ?? "" });
  const created = await b.ws.createWorkspace({
    repoId: repo.repository!.id,
    agentId,
    agentName: `turns-${repoSeq}`,
    mode: WorkspaceMode.PERSISTENT,
    ...(source ? {} : { baseCommit: "0000000000000000000000000000000000000000" }),
  });
  return { sessionId: created.workspace!.sessionId, workspaceId: created.workspace!.workspaceId };
}
