/**
 * Races against real PostgreSQL (defect 6 of the reference: its contended-resume test was
 * skipped; ours runs): 20 concurrent resumes of one stranded session, and resume against abandon.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { BerthError } from "../../src/platform/errors.js";
import { needs } from "../support/services.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { harness, workspaceRow, type Harness } from "./helpers.js";

needs({ postgres: true })("lifecycle races on postgres", () => {
  let database: TestDatabase;
  let h: Harness;
  let other: Harness;
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    h = await harness(database.opened.db, { instanceName: "race-a" });
    // A second instance with its own connection pool, so the racers really are concurrent transactions.
    const second = await database.reopen();
    other = await harness(second.db, { instanceName: "race-b", repoId: h.repoId, clock: h.clock });
    afterAll(() => second.close());
  });
  afterAll(async () => {
    await h?.lifecycle.stop();
    await other?.lifecycle.stop();
    await database?.drop();
  });

  it("20 concurrent ResumeSession: exactly one wins, 19 get ALREADY_RESUMED with the winner's id", async () => {
    const ws = await h.create();
    await h.lifecycle.strand(ws.sessionId, "explicit");
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? h : other).lifecycle.resume(ws.sessionId, "agent-a")),
    );
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toHaveLength(1);
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<Harness["lifecycle"]["resume"]>>>).value;
    expect(lost).toHaveLength(19);
    for (const l of lost) {
      expect(l.reason).toBeInstanceOf(BerthError);
      expect((l.reason as BerthError).reason).toBe("ALREADY_RESUMED");
      expect((l.reason as BerthError).metadata.new_session_id).toBe(winner.sessionId);
    }
    const rows = await sql<{ n: string }>`SELECT count(*) AS n FROM session_redirects WHERE dead_session_id = ${ws.sessionId}::uuid`.execute(h.db);
    expect(Number(rows.rows[0]!.n)).toBe(1);
    expect((await workspaceRow(h.db, ws.workspaceId)).session_id).toBe(winner.sessionId);
    const resumedEvents = await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE kind = 'session.resumed' AND workspace_id = ${ws.workspaceId}::uuid`.execute(h.db);
    expect(Number(resumedEvents.rows[0]!.n)).toBe(1);
  });

  it("resume racing abandon: one outcome, consistent rows (20 rounds)", async () => {
    const outcomes = { resumed: 0, abandoned: 0 };
    for (let round = 0; round < 20; round++) {
      const ws = await h.create();
      await h.lifecycle.strand(ws.sessionId, "explicit");
      const [resume, abandon] = await Promise.allSettled([
        (round % 2 ? h : other).lifecycle.resume(ws.sessionId, "agent-a"),
        (round % 2 ? other : h).lifecycle.abandon(ws.sessionId, "explicit"),
      ]);
      const row = await workspaceRow(h.db, ws.workspaceId);
      const cs = await sql<{ state: string }>`SELECT state FROM changesets WHERE id = ${ws.changeset.id}::uuid`.execute(h.db);
      const redirects = await sql<{ n: string }>`SELECT count(*) AS n FROM session_redirects WHERE workspace_id = ${ws.workspaceId}::uuid`.execute(h.db);
      if (resume.status === "fulfilled") {
        outcomes.resumed++;
        expect(abandon.status).toBe("rejected");
        expect(((abandon as PromiseRejectedResult).reason as BerthError).reason).toBe("SESSION_RESUMED");
        expect(row.lifecycle).toBe("active");
        expect(row.session_id).toBe(resume.value.sessionId);
        expect(cs.rows[0]!.state).toBe("draft");
        expect(Number(redirects.rows[0]!.n)).toBe(1);
      } else {
        outcomes.abandoned++;
        expect(abandon.status).toBe("fulfilled");
        expect((resume.reason as BerthError).reason).toBe("SESSION_ABANDONED");
        expect(row.lifecycle).toBe("abandoned");
        expect(row.session_id).toBe(ws.sessionId);
        expect(cs.rows[0]!.state).toBe("rejected");
        expect(Number(redirects.rows[0]!.n)).toBe(0);
      }
    }
    expect(outcomes.resumed + outcomes.abandoned).toBe(20);
  });
});
