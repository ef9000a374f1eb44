/**
 * A write whose caller gave up is not stored late. The client of a WriteFile that hit its
 * deadline may already have sent its next write (to this instance or another); the first one,
 * still waiting for the workspace's lock on the server, must not overwrite it when it gets the
 * lock. The lock is held from the test by a transaction of its own, so the wait is certain.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { gitRepo, utf8 } from "./helpers.js";

needs({ postgres: true })("a write its caller gave up on", () => {
  let berth: TestBerth;
  let repoId: string;

  beforeAll(async () => {
    const src = gitRepo();
    berth = await startBerth({ instances: 1 });
    repoId = (await berth.grpc.registerRepository({ name: "abandoned-write", sourcePath: src.dir })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("stores nothing of a WriteFile whose deadline passed while it waited for the workspace's lock", async () => {
    const { workspace } = await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: "agent-deadline" });
    const ws = workspace!;
    const db = berth.database.opened.db;
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM workspaces WHERE id = ${ws.workspaceId}::uuid FOR UPDATE`.execute(trx);
      locked();
      await new Promise<void>((r) => (release = r));
    });
    await isLocked;
    const late = await failure(berth.grpc.writeFile({ sessionId: ws.sessionId, path: "notes/order.txt", content: utf8("first, abandoned\n") }, { deadlineMs: 300 }));
    expect(late.code).toBe("DEADLINE_EXCEEDED");
    // The client's deadline passing is not yet the server's: the server hears of it by the
    // client's cancel or by its own copy of the deadline, which started when it received the call,
    // before its lock statement began to wait. Once that statement has waited longer than the
    // timeout, the server's deadline has passed too, and its timer runs before the lock can be
    // granted (releasing it takes a round trip). Released earlier, the test would race the
    // server's hearing of the cancel: a write no server can refuse (it failed so under load).
    await vi.waitFor(
      async () => {
        const r = await sql<{ past: boolean | null }>`SELECT bool_and(clock_timestamp() - query_start > interval '320 milliseconds') AS past
          FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(db);
        expect(r.rows[0]?.past).toBe(true);
      },
      { timeout: 10_000, interval: 20 },
    );
    // The lock is released only now: the abandoned write, queued first for the workspace's lock
    // (and first in this instance's per-workspace queue), is decided before the next write.
    release();
    await holder;
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "notes/barrier.txt", content: utf8("after it\n") });
    expect((await failure(berth.grpc.readFile({ sessionId: ws.sessionId, path: "notes/order.txt" }))).reason).toBe("FILE_NOT_FOUND");
    const written = await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE workspace_id = ${ws.workspaceId}::uuid AND kind = 'file.written'`.execute(db);
    expect(Number(written.rows[0]!.n)).toBe(1); // the barrier's
  });
});
