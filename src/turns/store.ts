/** Every statement on the turns table (migrations/0005_turns.ts; TurnTable in src/platform/schema.ts), in raw SQL. */
import { sql, type RawBuilder, type Selectable, type Transaction } from "kysely";
import { eventValues, insertEvents, insertEventsFrom, type PreparedEvent } from "../platform/outbox.js";

type EventRow = PreparedEvent["row"];
import type { Db } from "../platform/database.js";
import type { Database, LeftOutRow, OutcomeName, TurnStateName, TurnTable } from "../platform/schema.js";
import { instanceAlive } from "../sessions/lifecycle.repository.js";
import type { PrefixMatch, PrefixQuery } from "../sessions/id-prefixes.js";

export type { OutcomeName, TurnStateName };

/** A turn row as read (SELECT *) and as written; seq is the database's (insertion order), never read. */
export type TurnRow = Omit<Selectable<TurnTable>, "seq" | "environment_released" | "captured_paths" | "left_out" | "exit_code" | "exit_signal" | "commit_messages"> & {
  environment_released?: boolean;
  captured_paths?: string[] | null;
  left_out?: LeftOutRow[] | null;
  exit_code?: number | null;
  exit_signal?: string | null;
  commit_messages?: string[] | null;
};

/** What a running turn's row is given when it stops (EndTurn: the outcome and what the turn recorded). */
export interface FinishFields {
  readonly outcome?: OutcomeName;
  readonly supersededBy?: string;
  readonly reason?: string;
  readonly captured?: readonly string[];
  readonly leftOut?: readonly { path: string; reason: string }[];
  readonly exit?: { readonly code?: number; readonly signal?: string };
  readonly commitMessages?: readonly string[];
  readonly at: Date;
}

/** The SET list of a finished turn: every column a finish writes, NULL for what it was not given. */
function finishSet(state: Exclude<TurnStateName, "running">, f: FinishFields): RawBuilder<unknown> {
  return sql`state = ${state}, outcome = ${f.outcome ?? null}, superseded_by = ${f.supersededBy ?? null}, end_reason = ${f.reason ?? ""}, ended_at = ${f.at},
    captured_paths = ${f.captured ? [...f.captured] : null}::text[], left_out = ${f.leftOut ? JSON.stringify(f.leftOut) : null}::jsonb,
    exit_code = ${f.exit?.code ?? null}::integer, exit_signal = ${f.exit?.signal ?? null}::text, commit_messages = ${f.commitMessages ? [...f.commitMessages] : null}::text[]`;
}

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

/**
 * insertTurnWithEvents made conditional on the session's row: the turn row and its events are
 * written only when `held` (sessions/registry.repository.ts sessionRowHolds: the workspace row
 * still holding what the session's check on its live object relied on, locked FOR SHARE) finds
 * the row. One statement in autocommit, as insertTurnWithEvents: the session check of a warm
 * BeginTurn and its write are one round trip. False, writing nothing, when the row moved.
 */
export async function insertTurnIfHeld(q: Q, r: TurnRow, events: readonly EventRow[], held: RawBuilder<unknown>): Promise<boolean> {
  const res = await sql<{ n: number | string }>`WITH held AS MATERIALIZED (${held}), t AS (
      INSERT INTO turns (id, session_id, workspace_id, repo_id, client_turn_id, state, outcome, environment_path, warm, superseded_by, end_reason, instance_id, started_at, ended_at)
      SELECT ${r.id}::uuid, ${r.session_id}::uuid, ${r.workspace_id}::uuid, ${r.repo_id}::uuid, ${r.client_turn_id}::text, ${r.state}::text, ${r.outcome}::text, ${r.environment_path}::text,
        ${r.warm}::boolean, ${r.superseded_by}::uuid, ${r.end_reason}::text, ${r.instance_id}::uuid, ${r.started_at}::timestamptz, ${r.ended_at}::timestamptz
      FROM held
      RETURNING 1
    ), ev AS (${insertEventsFrom(sql`SELECT * FROM (${eventValues(events)}) AS v WHERE EXISTS (SELECT 1 FROM t)`)})
    SELECT count(*) AS n FROM t`.execute(q);
  return Number(res.rows[0]?.n ?? 0) > 0;
}

/** Moves a running turn to a final state; false when it was not running. */
export async function finishTurn(q: Q, id: string, state: Exclude<TurnStateName, "running">, fields: FinishFields): Promise<boolean> {
  const r = await sql`UPDATE turns SET ${finishSet(state, fields)} WHERE id = ${id} AND state = 'running'`.execute(q);
  return Number(r.numAffectedRows ?? 0n) > 0;
}

/**
 * finishTurn and the events it reports in one statement (one round trip in autocommit); the
 * events are stored only when the turn was running. The caller wakes event delivery.
 */
export async function finishTurnWithEvents(q: Q, id: string, state: Exclude<TurnStateName, "running">, fields: FinishFields, events: readonly EventRow[]): Promise<boolean> {
  if (events.length === 0) return finishTurn(q, id, state, fields);
  const r = await sql<{ n: number | string }>`WITH u AS (
      UPDATE turns SET ${finishSet(state, fields)} WHERE id = ${id} AND state = 'running' RETURNING 1
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

/**
 * A page of a session's turns, newest first (insertion order among turns of one instant), before
 * the key (started_at, seq) of the last of the previous page; each row with its seq, the next key.
 */
export async function listBySession(q: Q, sessionId: string, before: { readonly startedAt: Date; readonly seq: number } | undefined, limit: number): Promise<{ row: TurnRow; seq: number }[]> {
  const r = before
    ? await sql<Selectable<TurnTable>>`SELECT * FROM turns WHERE session_id = ${sessionId} AND (started_at, seq) < (${before.startedAt}, ${before.seq})
        ORDER BY started_at DESC, seq DESC LIMIT ${limit}`.execute(q)
    : await sql<Selectable<TurnTable>>`SELECT * FROM turns WHERE session_id = ${sessionId} ORDER BY started_at DESC, seq DESC LIMIT ${limit}`.execute(q);
  return r.rows.map((row) => ({ row: normalise(row), seq: Number(row.seq) }));
}

/**
 * At start: RUNNING turns no live owner can still be running become ENDED/FAILED with end_reason
 * server_restart: those of earlier incarnations of this instance (same name) and of instances
 * that are stopped or silent (judged with the database's clock). Turns of an instance that is
 * alive are left alone — whichever instance owns their workspace — and so are turns of
 * workspaces another live instance still owns (the startup reconcile's view of who is alive).
 */
export async function failOrphanedTurns(q: Q, me: string | undefined, myName: string | undefined, staleAfterMs: number, at: Date): Promise<number> {
  const r = await sql`UPDATE turns SET state = 'ended', outcome = 'failed', end_reason = 'server_restart', ended_at = ${at}
    WHERE state = 'running' AND instance_id IS DISTINCT FROM ${me ?? null}
      AND NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = turns.workspace_id AND w.lifecycle = 'active' AND w.owner_instance = turns.instance_id)
      AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = turns.instance_id AND i.name IS DISTINCT FROM ${myName ?? null} AND ${instanceAlive("i", staleAfterMs)})`.execute(q);
  return Number(r.numAffectedRows ?? 0n);
}

// ---- several instances (migrations/0008_turns_scale_out.ts; docs/turns.md, "Several instances") ----

/** A turn row that says who holds a workspace's environment, with what is known of its instance. */
export interface HolderRow {
  id: string;
  state: TurnStateName;
  outcome: OutcomeName | null;
  instance_id: string | null;
  environment_released: boolean;
  /** The instance's advertise_addr (NULL: not known, or no such instance row). */
  advertise_addr: string | null;
  /** The instance row exists, is not stopped and heartbeat within staleAfterMs of the database's now(). */
  alive: boolean;
}

/**
 * One round trip: the workspace's RUNNING turn (at most one: turns_one_running) and its most
 * recent turn, each with its instance's address and liveness. Running first.
 */
export async function environmentHolders(q: Q, workspaceId: string, staleAfterMs: number): Promise<HolderRow[]> {
  const cols = sql.raw("id, state, outcome, instance_id, environment_released, seq");
  const r = await sql<HolderRow>`
    SELECT t.id, t.state, t.outcome, t.instance_id, t.environment_released, i.advertise_addr,
      COALESCE(i.id IS NOT NULL AND ${instanceAlive("i", staleAfterMs)}, false) AS alive
    FROM ((SELECT ${cols} FROM turns WHERE workspace_id = ${workspaceId}::uuid AND state = 'running' LIMIT 1)
          UNION ALL
          (SELECT ${cols} FROM turns WHERE workspace_id = ${workspaceId}::uuid ORDER BY seq DESC LIMIT 1)) AS t
    LEFT JOIN instances i ON i.id = t.instance_id
    ORDER BY (t.state = 'running') DESC, t.seq DESC`.execute(q);
  return r.rows.map((row) => ({ ...row, alive: row.alive === true }));
}

/** An instance's address and liveness (judged with the database's now()); undefined when it has no row. */
export async function instanceState(q: Q, instanceId: string, staleAfterMs: number): Promise<{ advertise_addr: string | null; alive: boolean } | undefined> {
  const r = await sql<{ advertise_addr: string | null; alive: boolean }>`
    SELECT i.advertise_addr, ${instanceAlive("i", staleAfterMs)} AS alive FROM instances i WHERE i.id = ${instanceId}::uuid`.execute(q);
  const row = r.rows[0];
  return row ? { advertise_addr: row.advertise_addr, alive: row.alive === true } : undefined;
}

/** Every live instance (judged with the database's now()) with its advertise address. */
export async function liveInstances(q: Q, staleAfterMs: number): Promise<{ id: string; advertise_addr: string | null }[]> {
  const r = await sql<{ id: string; advertise_addr: string | null }>`
    SELECT i.id, i.advertise_addr FROM instances i WHERE ${instanceAlive("i", staleAfterMs)} ORDER BY i.id`.execute(q);
  return r.rows;
}

/** The workspace's most recent turn: its session and the name of the instance that ran it (NULL: row gone). */
export async function lastTurnOf(q: Q, workspaceId: string): Promise<{ session_id: string; instance_name: string | null } | undefined> {
  const r = await sql<{ session_id: string; instance_name: string | null }>`
    SELECT t.session_id, i.name AS instance_name FROM turns t LEFT JOIN instances i ON i.id = t.instance_id
    WHERE t.workspace_id = ${workspaceId}::uuid ORDER BY t.seq DESC LIMIT 1`.execute(q);
  return r.rows[0];
}

/** The workspace's RUNNING turn whose instance is alive (by the database's now()), if any. */
export async function runningTurnOnLiveInstance(q: Q, workspaceId: string, staleAfterMs: number): Promise<{ id: string; instance_id: string | null } | undefined> {
  const r = await sql<{ id: string; instance_id: string | null }>`
    SELECT t.id, t.instance_id FROM turns t JOIN instances i ON i.id = t.instance_id
    WHERE t.workspace_id = ${workspaceId}::uuid AND t.state = 'running' AND ${instanceAlive("i", staleAfterMs)}`.execute(q);
  return r.rows[0];
}

/** The workspace's RUNNING turn, if any. */
export async function runningTurnOf(q: Q, workspaceId: string): Promise<TurnRow | undefined> {
  const r = await sql<TurnRow>`SELECT * FROM turns WHERE workspace_id = ${workspaceId}::uuid AND state = 'running'`.execute(q);
  return r.rows[0] ? normalise(r.rows[0]) : undefined;
}

/**
 * A RUNNING turn whose instance is dead (stopped, silent, or gone) becomes ENDED/FAILED with
 * end_reason owner_lost, and its events are stored — one statement; nothing happens (false)
 * when the turn is no longer running or its instance turned out to be alive after all.
 */
export async function failLostTurnWithEvents(q: Q, turnId: string, staleAfterMs: number, at: Date, events: readonly EventRow[]): Promise<boolean> {
  const r = await sql<{ n: number | string }>`WITH u AS (
      UPDATE turns SET state = 'ended', outcome = 'failed', end_reason = 'owner_lost', ended_at = ${at}
      WHERE id = ${turnId}::uuid AND state = 'running'
        AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = turns.instance_id AND ${instanceAlive("i", staleAfterMs)})
      RETURNING 1
    ), ev AS (${insertEventsFrom(sql`SELECT * FROM (${eventValues(events)}) AS v WHERE EXISTS (SELECT 1 FROM u)`)})
    SELECT count(*) AS n FROM u`.execute(q);
  return Number(r.rows[0]?.n ?? 0) > 0;
}

/**
 * RUNNING turns whose instance is dead (stopped, silent, or gone), oldest first, at most `limit`:
 * what the dead-owner sweep fails (owner_lost) without waiting for a call to name them.
 */
export async function runningTurnsOfDeadInstances(q: Q, staleAfterMs: number, limit: number): Promise<TurnRow[]> {
  const r = await sql<Selectable<TurnTable>>`SELECT * FROM turns
    WHERE state = 'running' AND instance_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM instances i WHERE i.id = turns.instance_id AND ${instanceAlive("i", staleAfterMs)})
    ORDER BY started_at LIMIT ${limit}`.execute(q);
  return r.rows.map(normalise);
}

/** This instance no longer holds the workspace's environment: says so on its finished turns of it. */
export async function releaseEnvironment(q: Q, workspaceId: string, instanceId: string): Promise<void> {
  await sql`UPDATE turns SET environment_released = true
    WHERE workspace_id = ${workspaceId}::uuid AND instance_id = ${instanceId}::uuid AND state <> 'running' AND NOT environment_released`.execute(q);
}

/**
 * The commit messages EndTurn kept for the turns of these workspaces, in turn order (started_at,
 * then insertion), flattened: a changeset's default commit message goes on with them.
 */
export async function keptCommitMessages(q: Q, workspaceIds: readonly string[]): Promise<string[]> {
  if (workspaceIds.length === 0) return [];
  const r = await sql<{ commit_messages: string[] }>`SELECT commit_messages FROM turns
    WHERE workspace_id = ANY(${[...workspaceIds]}::uuid[]) AND commit_messages IS NOT NULL AND cardinality(commit_messages) > 0
    ORDER BY started_at, seq`.execute(q);
  return r.rows.flatMap((row) => row.commit_messages);
}

/** A unique violation of a turn row insert: which index (turns_one_running, turns_client_id), when the driver says. */
export function turnConflict(err: unknown): { constraint: string | undefined } | undefined {
  const e = err as { code?: string; constraint?: string } | null;
  return e?.code === "23505" ? { constraint: e.constraint } : undefined;
}

function normalise(r: TurnRow): TurnRow {
  return {
    ...r,
    environment_released: r.environment_released === true,
    started_at: r.started_at instanceof Date ? r.started_at : new Date(r.started_at),
    ended_at: r.ended_at === null ? null : r.ended_at instanceof Date ? r.ended_at : new Date(r.ended_at),
  };
}

/**
 * The turn ids in the prefix's range (ResolveIdPrefix), ascending, with their repository: a range
 * scan of the primary key, narrowed to the turns of one agent's workspaces when q.agentId is set
 * (sessions/id-prefixes.ts says the same for the other kinds).
 */
export async function turnIdsWithPrefix(q: Q, query: PrefixQuery): Promise<PrefixMatch[]> {
  const from = query.after === undefined ? sql`t.id >= ${query.bounds.lowest}` : sql`t.id > ${query.after}`;
  const agent = query.agentId === undefined ? sql`` : sql`AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = t.workspace_id AND w.agent_id = ${query.agentId})`;
  const { rows } = await sql<{ id: string; repo_id: string }>`SELECT t.id, t.repo_id FROM turns t
    WHERE ${from} AND t.id <= ${query.bounds.highest} ${agent}
    ORDER BY t.id LIMIT ${query.limit}`.execute(q);
  return rows.map((r) => ({ id: r.id, repoId: r.repo_id }));
}
