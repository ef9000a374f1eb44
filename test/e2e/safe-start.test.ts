/**
 * A second `berth serve` started by mistake on the same database must not touch the running
 * server's sessions: it binds its ports before anything changes state, and refuses to start
 * while an instance of the same name still heartbeats.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { WorkspaceMode, LifecycleState } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { serve, spawnServe, type Served } from "../support/serve-process.js";
import { needs } from "../support/services.js";

needs({ postgres: true })("a second server on the same database", () => {
  let database: TestDatabase;
  let running: Served;
  let client: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  const sessions: string[] = [];
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    running = await serve({ DATABASE_URL: database.url!, BERTH_INSTANCE_NAME: "berth-a" });
    client = createGrpcClient(WorkspaceService, running.grpc);
    const { repository } = await client.registerRepository({ name: "safe-start" });
    for (let i = 0; i < 3; i++) {
      const { workspace } = await client.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "agent" });
      sessions.push(workspace!.sessionId);
    }
  });
  afterAll(async () => {
    client?.close();
    running?.child.kill("SIGTERM");
    await running?.exited;
    await database?.drop();
  });

  async function stillActive(): Promise<void> {
    for (const sessionId of sessions) {
      await client.heartbeat({ sessionId });
      expect((await client.getWorkspace({ sessionId })).workspace?.lifecycleState).toBe(LifecycleState.ACTIVE);
    }
  }

  it("on the running server's address exits non-zero on the taken port and strands nothing", async () => {
    const second = spawnServe({ DATABASE_URL: database.url!, BERTH_ADDR: running.grpc, BERTH_INSTANCE_NAME: "berth-a" });
    expect(await second.exited).not.toBe(0);
    expect(second.stderr() + JSON.stringify(second.lines)).toContain("EADDRINUSE");
    expect(second.lines.some((l) => l.msg === "startup reconcile")).toBe(false);
    await stillActive();
  });

  it("under the running server's name exits non-zero with INSTANCE_NAME_IN_USE and strands nothing", async () => {
    const second = spawnServe({ DATABASE_URL: database.url!, BERTH_INSTANCE_NAME: "berth-a" });
    expect(await second.exited).not.toBe(0);
    expect(second.stderr() + JSON.stringify(second.lines)).toContain("INSTANCE_NAME_IN_USE");
    await stillActive();
  });
});
