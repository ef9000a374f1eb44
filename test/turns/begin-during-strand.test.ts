/**
 * A BeginTurn whose session is stranded while its environment is being prepared: the agent is
 * answered with the session's state (SESSION_STRANDED, so it knows to resume), not a bare
 * TURN_CANCELLED. The preparation is held open deterministically: the cold acquire's read of
 * the overlay waits on a gate the test opens after the strand has cancelled the turn.
 */
import { rmSync } from "node:fs";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { rpcFailure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

needs({ postgres: true })("BeginTurn while its session is stranded", () => {
  let berth: TurnBerth;
  let source: string;
  /** Set: the next materialise's overlay read reports `entered` and waits for `open`. */
  let gate: { entered: () => void; open: Promise<void> } | undefined;

  beforeAll(async () => {
    source = makeGitRepo(5);
    berth = await startTurnBerth({
      instances: 1, // the gate is in this process's scheduler
      wrapOverlay: (real) => ({
        ...real,
        readBase: (w, p) => real.readBase(w, p),
        usage: (w) => real.usage(w),
        writeFile: (i) => real.writeFile(i),
        deleteFile: (i) => real.deleteFile(i),
        entries: async (w) => {
          const g = gate;
          gate = undefined;
          if (g) {
            g.entered();
            await g.open;
          }
          return real.entries(w);
        },
      }),
    });
  });
  afterAll(async () => {
    await berth?.close();
    rmSync(source, { recursive: true, force: true });
  });

  /** A BeginTurn of the session, held in its acquire until `open()`; `begin` settles with its error (undefined if it succeeded). */
  async function beginHeldInAcquire(sessionId: string): Promise<{ open: () => void; begin: Promise<unknown> }> {
    let open!: () => void;
    const entered = new Promise<void>((resolve) => {
      gate = { entered: resolve, open: new Promise<void>((r) => (open = r)) };
    });
    const begin = berth.turns.beginTurn({ sessionId }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await entered;
    return { open, begin };
  }

  it("answers SESSION_STRANDED, not TURN_CANCELLED, when the session is stranded before the turn started", async () => {
    const { sessionId } = await newSession(berth, source);
    const { open, begin } = await beginHeldInAcquire(sessionId);
    // The strand's commit reaches this instance's scheduler before the RPC returns (the unit of
    // work's after-commit path): the turn is cancelled now, while its acquire still waits.
    await berth.ws.strandSession({ sessionId, reason: "test" });
    open();
    expect(rpcFailure(await begin)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED" });
  });

  it("writes no RUNNING turn for a session stranded where this instance cannot stop the turn, and answers SESSION_STRANDED", async () => {
    const { sessionId, workspaceId } = await newSession(berth, source);
    const { open, begin } = await beginHeldInAcquire(sessionId);
    // The row strands under the turn without its event reaching this scheduler: as when the
    // strand was heard here before the turn was placed, so that nothing here stops the turn.
    await sql`UPDATE workspaces SET lifecycle = 'stranded', stranded_at = now(), lifecycle_reason = 'test' WHERE id = ${workspaceId}::uuid`.execute(berth.database.opened.db);
    open();
    expect(rpcFailure(await begin)).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED" });
    const running = await sql<{ n: string }>`SELECT count(*) AS n FROM turns WHERE workspace_id = ${workspaceId}::uuid AND state = 'running'`.execute(berth.database.opened.db);
    expect(Number(running.rows[0]!.n)).toBe(0);
  });
});
