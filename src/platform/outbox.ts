/**
 * The transactional outbox: every event is inserted by the transaction that makes the change
 * it reports, so an acknowledged change has its events and a rolled-back one has none.
 *
 * Ordering: rows are inserted with seq NULL. A sequence assigned at insert would be wrong: a
 * reader could see seq 12 committed before seq 11 and skip 11 forever. Instead the sequencer
 * (src/delivery/sequencer.ts) numbers rows after they commit, so readers never skip; and unlike a
 * lock held from insert to commit, writers never wait for each other (their commits group).
 */
import { randomUUID } from "node:crypto";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { Insertable, Transaction } from "kysely";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import type { Database, EventTable } from "./schema.js";

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
 * The stored payload: a berth.v1.Event holding only the kind-specific oneof. Every other field
 * of the Event is a column, filled in when the row is read (src/delivery/event-store.ts), so a set-based
 * statement can insert the events of many rows with one shared payload.
 */
export function encodePayload(payload: EventInput["payload"]): Uint8Array {
  return payload ? toBinary(EventSchema, create(EventSchema, { payload })) : EMPTY;
}

const EMPTY = new Uint8Array(0);

/** The events row of an event: for callers that insert it within a statement of their own (a CTE). */
export function eventRow(e: EventInput): Insertable<EventTable> {
  return {
    id: randomUUID(),
    kind: e.kind,
    repo_id: e.repoId,
    session_id: e.sessionId ?? null,
    workspace_id: e.workspaceId ?? null,
    agent_id: e.agentId ?? null,
    changeset_id: e.changesetId ?? null,
    occurred_at: new Date(e.occurredAt),
    reason: e.reason ?? "",
    payload: encodePayload(e.payload),
  };
}

export async function appendEvents(trx: Transaction<Database>, inputs: readonly EventInput[]): Promise<void> {
  if (inputs.length === 0) return;
  await trx.insertInto("events").values(inputs.map(eventRow)).execute();
}
