/**
 * The transactional outbox: every event is inserted by the transaction (or the one statement)
 * that makes the change it reports, so an acknowledged change has its events and a rolled-back
 * one has none. This module holds the only `INSERT INTO events` of Berth: callers that insert
 * events inside a statement of their own (a data-modifying CTE, a set-based INSERT … SELECT)
 * embed `insertEventsFrom`, never a copy of the column list.
 *
 * Ordering: rows are inserted with seq NULL. A sequence assigned at insert would be wrong: a
 * reader could see seq 12 committed before seq 11 and skip 11 forever. Instead the sequencer
 * (src/delivery/sequencer.ts) numbers rows after they commit, so readers never skip; and unlike
 * a lock held from insert to commit, writers never wait for each other (their commits group).
 */
import { randomUUID } from "node:crypto";
import { create, toBinary, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { sql, type Insertable, type RawBuilder } from "kysely";
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
