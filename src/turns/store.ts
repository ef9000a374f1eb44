/** Every statement on the turns table (migrations/0005_turns.ts; TurnTable in src/platform/schema.ts), in raw SQL. */
import { sql, type Selectable, type Transaction } from "kysely";
import { eventValues, insertEvents, insertEventsFrom, type PreparedEvent } from "../platform/outbox.js";

type EventRow = PreparedEvent["row"];
import type { Db } from "../platform/database.js";
import type { Database, OutcomeName, TurnStateName, TurnTable } from "../platform/schema.js";

export type { OutcomeName, TurnStateName };

/** A turn row as read (SELECT *) and as written; seq is the database's (insertion order), never read. */
export type TurnRow = Omit<Selectable<TurnTable>, "seq">;

type Q = Db | Transaction<Database>;

export async function insertTurn(q: Q, r: TurnRow): Promise<void> {
  await sql`INSERT INTO turns (id, session_id, workspace_id, repo_id, client_turn_id, state, outcome, environment_path, warm, superseded_by, end_reason, instance_id, started_at, ended_at)
    VALUES (${r.id}, ${r.session_id}, ${r.workspace_id}, ${r.repo_id}, ${r.client_turn_id}, ${r.state}, ${r.outcome}, ${r.environment_path}, ${r.warm}, ${r.superseded_by}, ${r.end_reason}, ${r.instance_id}, ${r.started_at}, ${r.ended_at})`.execute(q);
}

/**
 * The turn row and its events in one statement (one round trip in autocommit: a data-modifying
 * CTE is atomic, so the row and its events commit together or not at all). The caller wakes
 * statement through UnitOfWork.statement, which runs the after-commit path.
 */
export async function insertTurnWithEvents(q: Q, r: TurnRow, events: readonly EventRow[]): Promise<void> {
  if (events.length === 0) return insertTurn(q, r);
  await sql`WITH t AS (
      INSERT INTO turns (id, session_id, workspace_id, repo_id, client_turn_id, state, outcome, environment_path, warm, superseded_by, end_reason, instance_id, started_at, ended_at)
      VALUES (${r.id}, ${r.session_id}, ${r.workspace_id}, ${r.repo_id}, ${r.client_turn_id}, ${r.state}, ${r.outcome}, ${r.environment_path}, ${r.warm}, ${r.superseded_by}, ${r.end_reason}, ${r.instance_id}, ${r.started_at}, ${r.ended_at})
    )
    ${insertEvents(events)}`.execute(q);
}

/** Moves a running turn to a final state; false when it was not running. */
export async function finishTurn(q: Q, id: string, state: Exclude<TurnStateName, "running">, fields: { outcome?: OutcomeName; supersededBy?: string; reason?: string; at: Date }): Promise<boolean> {
  const r = await sql`UPDATE turns SET state = ${state}, outcome = ${fields.outcome ?? null}, superseded_by = ${fields.supersededBy ?? null},
      end_reason = ${fields.reason ?? ""}, ended_at = ${fields.at}
    WHERE id = ${id} AND state = 'running'`.execute(q);
  return Number(r.numAffectedRows ?? 0n) > 0;
}

/**
 * finishTurn and the events it reports in one statement (one round trip in autocommit); the
 * events are stored only when the turn was running. The caller wakes event delivery.
 */
export async function finishTurnWithEvents(q: Q, id: string, state: Exclude<TurnStateName, "running">, fields: { outcome?: OutcomeName; supersededBy?: string; reason?: string; at: Date }, events: readonly EventRow[]): Promise<boolean> {
  if (events.length === 0) return finishTurn(q, id, state, fields);
  const r = await sql<{ n: number | string }>`WITH u AS (
      UPDATE turns SET state = ${state}, outcome = ${fields.outcome ?? null}, superseded_by = ${fields.supersededBy ?? null},
        end_reason = ${fields.reason ?? ""}, ended_at = ${fields.at}
      WHERE id = ${id} AND state = 'running' RETURNING 1
    ), ev AS (${insertEventsFrom(sql`SELECT * FROM (${eventValues(events)}) AS v WHERE EXISTS (SELECT 1 FROM u)`)})
    SELECT count(*) AS n FROM u`.execute(q);
  return Number(r.rows[0]?.n ?? 0) > 0;
}

export async function findTurn(q: Q, id: string): Promise<TurnRow | undefined> {
  const r = await sql<Selectable<TurnTable>>`SELECT * FROM turns WHERE id = ${id}`.execute(q);
  return r.rows[0] ? normalise(r.rows[0]) : undefined;
}

export async function findByClientId(q: Q, sessionId: string, clientTurnId: string): Promise<TurnRow | undefined> {
  const r = await sql<Selectable<TurnTable>>`SELECT * FROM turns WHERE session_id = ${sessionId} AND client_turn_id = ${clientTurnId}`.execute(q);
  return r.rows[0] ? normalise(r.rows[0]) : undefined;
}

export async function listBySession(q: Q, sessionId: string, limit: number): Promise<TurnRow[]> {
  const r = await sql<Selectable<TurnTable>>`SELECT * FROM turns WHERE session_id = ${sessionId} ORDER BY started_at DESC, seq DESC LIMIT ${limit}`.execute(q);
  return r.rows.map(normalise);
}

/**
 * At start: RUNNING turns no live owner can still be running — their incarnation no longer
 * owns an active workspace for them (the reconcile stranded it, or it ended) — become
 * ENDED/FAILED with end_reason server_restart. Turns of workspaces another live instance
 * still owns are left alone.
 */
export async function failOrphanedTurns(q: Q, me: string | undefined, at: Date): Promise<number> {
  const r = await sql`UPDATE turns SET state = 'ended', outcome = 'failed', end_reason = 'server_restart', ended_at = ${at}
    WHERE state = 'running' AND instance_id IS DISTINCT FROM ${me ?? null}
      AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = turns.workspace_id AND w.lifecycle = 'active' AND w.owner_instance = turns.instance_id)`.execute(q);
  return Number(r.numAffectedRows ?? 0n);
}

function normalise(r: TurnRow): TurnRow {
  return {
    ...r,
    started_at: r.started_at instanceof Date ? r.started_at : new Date(r.started_at),
    ended_at: r.ended_at === null ? null : r.ended_at instanceof Date ? r.ended_at : new Date(r.ended_at),
  };
}
