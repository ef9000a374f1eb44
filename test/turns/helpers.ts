/** A real Berth (real PostgreSQL, real directories) with TurnService and WorkspaceService clients. */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { loadConfig } from "../../src/config.js";
import type { Clock } from "../../src/platform/clock.js";
import type { OverlayPort } from "../../src/overlay/overlay-port.js";
import { build, type BerthServer } from "../../src/transport/build.js";
import { captureLogger } from "../support/berth.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";

export interface TurnBerth {
  readonly server: BerthServer;
  readonly database: TestDatabase;
  readonly ws: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  readonly turns: ReturnType<typeof createGrpcClient<typeof TurnService>>;
  readonly envRoot: string;
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
}

export async function startTurnBerth(options: TurnBerthOptions = {}): Promise<TurnBerth> {
  const database = options.database ?? (await createTestDatabase());
  const envRoot = mkdtempSync(path.join(tmpdir(), "berth-envs-"));
  const config = loadConfig({
    BERTH_ADDR: "127.0.0.1:0",
    BERTH_HTTP_ADDR: "127.0.0.1:0",
    BERTH_SHUTDOWN_GRACE_MS: "500",
    BERTH_METRICS_ADDR: "127.0.0.1:0",
    BERTH_ENV_ROOT: envRoot,
    ...options.env,
  });
  const logs: Record<string, unknown>[] = [];
  let real: OverlayPort | undefined = undefined;
  const proxy: OverlayPort = {
    writeFile: (i) => real!.writeFile(i),
    deleteFile: (i) => real!.deleteFile(i),
    entries: (w) => real!.entries(w),
    readBase: (w, p) => real!.readBase(w, p),
  };
  const server = await build(config, {
    logger: captureLogger(logs),
    database: database.opened,
    ...(options.clock ? { clock: options.clock } : {}),
    turnOverlay: proxy,
    turns: { sweepIntervalMs: 0 },
    ...(options.instanceName ? { instanceName: options.instanceName } : {}),
  });
  real = options.wrapOverlay ? options.wrapOverlay(server.overlay) : server.overlay;
  const ws = createGrpcClient(WorkspaceService, server.grpcAddress);
  const turns = createGrpcClient(TurnService, server.grpcAddress);
  return {
    server,
    database,
    ws,
    turns,
    envRoot,
    logs,
    async close() {
      ws.close();
      turns.close();
      await server.close(200);
      if (!options.database) await database.drop();
      rmSync(envRoot, { recursive: true, force: true });
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
