/**
 * The turn row's statement alone, plain (insertTurnWithEvents) and folded with the session check
 * (insertTurnIfHeld: the workspace row matched and locked FOR SHARE), alternated on one connection
 * of a fresh database: round trip per statement (autocommit, its WAL flush included), median of
 * `n` each, per round. What the fold adds to the insert it keeps, beside the read it removes
 * (the narrow live check, timed the same way).
 * Usage: npx tsx bench/tools/turn-insert-cost.ts [n per kind and round, default 300] [rounds, default 3]
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { CompiledQuery, sql } from "kysely";
import { createBenchDatabase } from "../lib/database.js";
import { openDatabase } from "../../src/platform/database.js";
import { migrateToLatest } from "../../src/platform/migrate.js";
import { prepareEvent } from "../../src/platform/outbox.js";
import { checkLiveSessions, sessionRowHolds } from "../../src/sessions/registry.repository.js";
import { insertTurnIfHeld, insertTurnWithEvents, type TurnRow } from "../../src/turns/store.js";

const N = Number(process.argv[2] ?? 300);
const ROUNDS = Number(process.argv[3] ?? 3);
const bench = await createBenchDatabase();
const opened = await openDatabase({ url: bench.url, dataDir: "unused", poolMax: 1 });
try {
  const db = opened.db;
  await migrateToLatest(db);
  const repo = randomUUID(), cs = randomUUID(), ws = randomUUID(), session = randomUUID();
  await sql`INSERT INTO repositories (id, name, source_path, created_at) VALUES (${repo}::uuid, 'cost', NULL, now())`.execute(db);
  await sql`INSERT INTO changesets (id, repo_id, state, reason, created_at, updated_at) VALUES (${cs}::uuid, ${repo}::uuid, 'draft', '', now(), now())`.execute(db);
  await sql`INSERT INTO workspaces (id, session_id, repo_id, agent_id, agent_name, changeset_id, intent, base_commit, mode, expires_at, created_at, last_active_at)
    VALUES (${ws}::uuid, ${session}::uuid, ${repo}::uuid, 'a', 'agent-1', ${cs}::uuid, '', 'main', 'persistent', NULL, now(), now())`.execute(db);
  const facts = { workspaceId: ws, sessionId: session, lifecycle: "active" as const, baseCommit: "main", changesetId: cs, changesetState: "draft" as const };
  const row = (): TurnRow => ({ id: randomUUID(), session_id: session, workspace_id: ws, repo_id: repo, client_turn_id: null, state: "ended", outcome: "completed", environment_path: "/x", warm: true, superseded_by: null, end_reason: "", instance_id: null, started_at: new Date(), ended_at: new Date() });
  const events = () => [prepareEvent({ kind: "turn.started", repoId: repo, sessionId: session, workspaceId: ws, agentId: "a", changesetId: cs, occurredAt: Date.now(), payload: { case: "turnChanged", value: { turnId: randomUUID(), clientTurnId: "", otherTurnId: "", outcome: 0, warm: true } } }).row];
  const kinds: Record<string, () => Promise<unknown>> = {
    "live check": () => checkLiveSessions(db, [session]),
    "insert (plain)": () => insertTurnWithEvents(db, row(), events()),
    "insert (folded)": () => insertTurnIfHeld(db, row(), events(), sessionRowHolds(facts)),
    "SELECT 1": () => db.executeQuery(CompiledQuery.raw("SELECT 1", [])),
  };
  for (const fn of Object.values(kinds)) for (let i = 0; i < 20; i++) await fn();
  for (let r = 0; r < ROUNDS; r++) {
    const out: string[] = [];
    for (const [name, fn] of Object.entries(kinds)) {
      const xs: number[] = [];
      for (let i = 0; i < N; i++) {
        const t = performance.now();
        await fn();
        xs.push(performance.now() - t);
      }
      xs.sort((a, b) => a - b);
      out.push(`${name} ${xs[xs.length >> 1]!.toFixed(3)} (p90 ${xs[Math.floor(xs.length * 0.9)]!.toFixed(3)})`);
    }
    console.log(`round ${r + 1}: ${out.join("; ")} ms`);
  }
} finally {
  await opened.close();
  await bench.drop();
}
