/**
 * A warm BeginTurn's liveness probe of the parked environment starts when the call arrives, before
 * the call waits on PostgreSQL (issue 16: the probe overlapped with a round trip instead of after
 * it), and that probe's answer is the one the acquire uses (no second probe). Since the session
 * check of a warm BeginTurn was folded into the turn row's insert (live-check.test.ts), the read
 * of the session's row that waits here is that insert's.
 */
import { rmSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { probe as realProbe, type Environment } from "../../src/turns/environment.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

needs({ postgres: true })("the warm BeginTurn's liveness probe", () => {
  let database: TestDatabase;
  let b: TurnBerth;
  let source: string;
  const probed: string[] = [];

  beforeAll(async () => {
    source = makeGitRepo(10);
    database = await createTestDatabase("postgres");
    // The real probe, watched: each call is recorded as it starts.
    b = await startTurnBerth({ database, instances: 1, probe: (env: Environment) => (probed.push(env.path), realProbe(env, 1000)) });
  });
  afterAll(async () => {
    await b?.close();
    await database?.drop();
    rmSync(source, { recursive: true, force: true });
  });

  it("starts before the session's row read waits on PostgreSQL, and is the only probe of that BeginTurn", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
    probed.length = 0;

    // Every read of a workspace row waits behind this lock until the test lets it go.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query("LOCK TABLE workspaces IN ACCESS EXCLUSIVE MODE");
      const begun = b.turns.beginTurn({ sessionId });
      await until("the probe to start while the row read is blocked", () => probed.length === 1);
      await until("the BeginTurn's row read to wait on the lock", async () => {
        const r = await locker.query("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'workspaces'::regclass");
        return r.rows[0].n > 0;
      });
      await locker.query("COMMIT");
      const t2 = await begun;
      expect(t2.warm).toBe(true);
      expect(probed).toEqual([t1.environmentPath]);
      await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    } finally {
      await locker.end();
    }
  });
});
