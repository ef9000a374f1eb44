/**
 * The transactional outbox: every event is inserted by the transaction (or the one statement)
 * that makes the change it reports, so an acknowledged change has its events and a rolled-back
 * one has none. This module holds the only `INSERT INTO events` of Berth: callers that insert
 * events inside a statement of their own (a data-modifying CTE, a set-based INSERT … SELECT)
 * embed `insertEventsFrom`, never a copy of the column list.
 *
 * Ordering: a sequence assigned at insert would be wrong: a reader could see seq 12 committed
 * before seq 11 and skip 11 forever. Most rows are inserted with seq NULL and the sequencer
 * (src/delivery/sequencer.ts) numbers them after they commit, so readers never skip, and these
 * writers never wait for each other (their commits group). A group-committed batch of creates
 * alone in flight numbers its events itself, holding the numbering lock through its commit
 * ("Numbering" below: the one rule for both).
 */
import { randomUUID } from "node:crypto";
import { create, toBinary, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { sql, type Insertable, type RawBuilder } from "kysely";
import type { Logger } from "pino";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import type { EventTable } from "./schema.js";

/** An event as a change records it. */
export interface EventInput {
  readonly kind: string;
  readonly repoId: string;
  readonly sessionId?: string | undefined;
  readonly workspaceId?: string | undefined;
  readonly agentId?: string | undefined;
  readonly changesetId?: string | undefined;
  readonly reason?: string | undefined;
  readonly occurredAt: number;
  readonly payload?: MessageInitShape<typeof EventSchema>["payload"];
}

/**
 * A committed event as in-process followers see it, whichever instance committed it: the
 * stored event format (berth.v1.Event), seq 0 for a local commit not yet numbered.
 */
export type CommittedEvent = MessageShape<typeof EventSchema>;

/** An event ready to store: its row, and the committed view followers get after commit. */
export interface PreparedEvent {
  readonly row: Insertable<EventTable>;
  readonly event: CommittedEvent;
}

const EMPTY = new Uint8Array(0);

/**
 * The stored payload: a berth.v1.Event holding only the kind-specific oneof. Every other field
 * of the Event is a column, filled in when the row is read (src/delivery/event-store.ts), so a
 * set-based statement can insert the events of many rows with one shared payload.
 */
export function encodePayload(payload: EventInput["payload"]): Uint8Array {
  return payload ? toBinary(EventSchema, create(EventSchema, { payload })) : EMPTY;
}

export function prepareEvent(e: EventInput): PreparedEvent {
  const id = randomUUID();
  const carrier = create(EventSchema, e.payload ? { payload: e.payload } : {});
  const row: Insertable<EventTable> & EnvelopeColumns = {
    id,
    kind: e.kind,
    repo_id: e.repoId,
    session_id: e.sessionId ?? null,
    workspace_id: e.workspaceId ?? null,
    agent_id: e.agentId ?? null,
    changeset_id: e.changesetId ?? null,
    occurred_at: new Date(e.occurredAt),
    reason: e.reason ?? "",
    payload: e.payload ? toBinary(EventSchema, carrier) : EMPTY,
  };
  return { event: fillEnvelope(carrier, row), row };
}

/** The columns of an events row that make an Event's envelope (everything but seq and the payload). */
export type EnvelopeColumns = Pick<Insertable<EventTable>, "id" | "kind" | "repo_id" | "session_id" | "workspace_id" | "agent_id" | "changeset_id" | "reason"> & { occurred_at: Date };

/** Fills an Event's envelope from its row (the stored payload holds only the kind-specific oneof). */
export function fillEnvelope(event: CommittedEvent, row: EnvelopeColumns): CommittedEvent {
  event.id = row.id;
  event.kind = row.kind;
  event.repoId = row.repo_id;
  event.sessionId = row.session_id ?? "";
  event.workspaceId = row.workspace_id ?? "";
  event.agentId = row.agent_id ?? "";
  event.changesetId = row.changeset_id ?? "";
  event.occurredAt = timestampFromDate(row.occurred_at);
  event.reason = row.reason ?? "";
  return event;
}

const COLUMNS = sql.raw("id, kind, repo_id, session_id, workspace_id, agent_id, changeset_id, occurred_at, reason, payload");

/** `INSERT INTO events` from `source`: a SELECT (or VALUES) yielding the columns in the order of COLUMNS. */
export function insertEventsFrom(source: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`INSERT INTO events (${COLUMNS}) ${source}`;
}

/** A VALUES list of event rows, typed for use as a source (or a subquery: `SELECT * FROM (…) AS v WHERE …`). */
export function eventValues(rows: readonly Insertable<EventTable>[]): RawBuilder<unknown> {
  return sql`VALUES ${sql.join(rows.map((e) =>
    sql`(${e.id}::uuid, ${e.kind}::text, ${e.repo_id}::uuid, ${e.session_id ?? null}::uuid, ${e.workspace_id ?? null}::uuid, ${e.agent_id ?? null}::text, ${e.changeset_id ?? null}::uuid, ${e.occurred_at}::timestamptz, ${e.reason ?? ""}::text, ${e.payload}::bytea)`))}`;
}

/** `INSERT INTO events VALUES …` of prepared rows (at least one). */
export function insertEvents(rows: readonly Insertable<EventTable>[]): RawBuilder<unknown> {
  return insertEventsFrom(eventValues(rows));
}

// ---- Numbering -------------------------------------------------------------------------------
//
// One rule orders seq: numbers are taken from outbox_head's one row, whose row lock the taking
// statement holds through its commit. So numbers are handed out in commit order, and a reader of
// `seq > last` that sees a number already sees every smaller one (the holder of a smaller one
// committed before the next holder could take its numbers). Two writers take numbers:
// - a writer whose statement numbers its own rows (the group-committed CreateWorkspace batch:
//   numberedEvents): no second write of its rows; it holds the row lock from the moment
//   it takes its numbers, late in its statement, until its commit;
// - the sequencer's pass (src/delivery/sequencer.ts), for every row inserted with seq NULL (every
//   other writer): it takes numbers for committed rows after their commit, under its advisory
//   lock (so passes do not number the same rows), and the same row lock.
// Each sends NOTIFY EVENTS_CHANNEL with the new head from the statement that took the numbers.

/**
 * What a commit that numbered its own events stored: they hold seq head − n + 1 … head, in the
 * order of `events`. Event delivery that has handed out everything up to head − n hands these
 * out as they are, without reading them back (src/delivery/hub.ts).
 */
export interface NumberedCommit {
  readonly head: bigint;
  readonly events: readonly PreparedEvent[];
}

/** Advisory lock key of the sequencer's passes ("berth-sq"). */
export const SEQUENCER_LOCK_KEY = 0x62657274682d7371n & 0x7fffffffffffffffn;

/** The channel a numbering statement notifies, and every hub listens on; the payload is the head seq. */
export const EVENTS_CHANNEL = "berth_events";

/**
 * Takes `count` numbers (a scalar SQL expression, evaluated before the row lock is taken:
 * whatever it reads runs first): `UPDATE outbox_head … RETURNING base, head` for a CTE, where the
 * numbers are base + 1 … base + count. No row (and no write) when count is 0.
 */
export function takeSeqs(count: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`UPDATE outbox_head SET last_seq = last_seq + (${count}) WHERE id = 1 AND (${count}) > 0
    RETURNING last_seq - (${count}) AS base, last_seq AS head`;
}

/** A select-list expression sending NOTIFY EVENTS_CHANNEL with `head` (at commit) when `notify` and head is not NULL. */
export function notifyHead(notify: boolean, head: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`CASE WHEN ${sql.lit(notify)} AND ${head} IS NOT NULL THEN pg_notify(${sql.lit(EVENTS_CHANNEL)}, (${head})::text) END`;
}

/**
 * CTEs that insert events numbered by their statement: append to the caller's
 * (`WITH a AS (…), b AS (…), ${this} SELECT … FROM numbering_result`). `source` is a SELECT
 * yielding `ord` (the order of the numbers) then the columns of insertEventsFrom. Have it read
 * the RETURNING of the statement's other data-modifying CTEs: they then run before the numbers
 * are taken, so the head's row lock is held for the events' insert and the commit only.
 * `numbering_result` is one row: `head`, the highest number taken (NULL when the statement left
 * its rows to the sequencer, or inserted none); reading it sends the NOTIFY.
 *
 * Causal order: a row that committed before this statement began must get a smaller number.
 * When the statement's snapshot holds a row still unnumbered (another writer's, waiting for a
 * pass), it numbers none of its own: they are inserted with seq NULL, and the pass numbers
 * them after that row. `number` false: the same statement leaves them to the sequencer.
 */
export function numberedEvents(source: RawBuilder<unknown>, notify: boolean, number = true): RawBuilder<unknown> {
  return sql`numbering_src AS (${source}),
    numbering_open AS (SELECT ${sql.lit(number)} AND NOT EXISTS (SELECT 1 FROM events WHERE seq IS NULL) AS open),
    numbering_seqs AS (${takeSeqs(sql`SELECT count(*) FROM numbering_src WHERE (SELECT open FROM numbering_open)`)}),
    numbering_rows AS (
      INSERT INTO events (seq, ${COLUMNS})
      SELECT numbering_seqs.base + row_number() OVER (ORDER BY s.ord), ${COLUMNS}
      FROM (SELECT * FROM numbering_src) AS s(ord, ${COLUMNS}) LEFT JOIN numbering_seqs ON true
    ),
    numbering_result AS MATERIALIZED (
      SELECT (SELECT head FROM numbering_seqs) AS head, ${notifyHead(notify, sql`(SELECT head FROM numbering_seqs)`)} AS notified
    )`;
}

/**
 * A full notification queue (SQLSTATE 54000, "too many notifications in the NOTIFY queue": some
 * listener stopped reading) fails the commit of a notifying transaction. Numbering must not stop
 * for it: `notifying` runs `attempt` again without the notification (listeners then learn of the
 * rows by their poll), and tries notifying again after this long. `attempt` must have committed
 * nothing when it fails (one statement, or one transaction).
 */
const NOTIFY_RETRY_MS = 10_000;
let notifyFailedAt: number | undefined;

function isNotifyQueueFull(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "54000";
}

/** Runs a numbering statement or transaction with NOTIFY on, unless the queue was full lately (see NOTIFY_RETRY_MS). */
export async function notifying<T>(attempt: (notify: boolean) => Promise<T>, logger?: Logger): Promise<T> {
  const notify = notifyFailedAt === undefined || Date.now() - notifyFailedAt >= NOTIFY_RETRY_MS;
  try {
    const result = await attempt(notify);
    if (notify && notifyFailedAt !== undefined) {
      notifyFailedAt = undefined;
      logger?.info("outbox: NOTIFY works again; other instances hear of commits at once");
    }
    return result;
  } catch (err) {
    if (!notify || !isNotifyQueueFull(err)) throw err;
    notifyFailedAt = Date.now();
    logger?.error({ err }, `outbox: NOTIFY ${EVENTS_CHANNEL} failed (notification queue full: a listener is not reading); numbering without it, other instances fall back to their poll`);
    return attempt(false);
  }
}
