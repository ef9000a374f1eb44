/**
 * Reads of the event outbox and of the delivery state (relay cursor, pruning horizon).
 * Shared by the hub, the WatchEvents replay, the NATS relay and the pruner.
 */
import { create, fromBinary, type MessageShape } from "@bufbuild/protobuf";
import { sql, type Selectable } from "kysely";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import type { Db } from "../platform/database.js";
import { fillEnvelope } from "../platform/outbox.js";
import type { EventTable } from "../platform/schema.js";
import { toSeq } from "../platform/schema.js";

export type Event = MessageShape<typeof EventSchema>;

export interface StoredEvent {
  readonly seq: bigint;
  readonly event: Event;
  /** Size of the stored payload in bytes (a cheap measure for buffer bounds). */
  readonly size: number;
}

export const EVENT_COLUMNS = ["seq", "id", "kind", "repo_id", "session_id", "workspace_id", "agent_id", "changeset_id", "occurred_at", "reason", "payload"] as const;

/** A sequenced row: seq is set (readers only read `seq > n`). */
export type EventRow = Omit<Selectable<EventTable>, "staged" | "seq"> & { seq: string | number | bigint };

/** Decodes a stored row: the payload holds the kind-specific oneof (src/platform/outbox.ts); the rest are columns. */
export function decodeRow(row: EventRow): StoredEvent {
  const seq = toSeq(row.seq);
  const event = row.payload.byteLength > 0 ? fromBinary(EventSchema, row.payload) : create(EventSchema);
  event.seq = seq;
  fillEnvelope(event, row);
  return { seq, event, size: storedSize(row.payload.byteLength, row.reason) };
}

/** What a stored event counts for against a subscriber's byte budget. */
export function storedSize(payloadBytes: number, reason: string): number {
  return 96 + payloadBytes + reason.length;
}

/** Events with after < seq <= upTo (upTo optional), in seq order, at most `limit`. */
export async function readEvents(db: Db, after: bigint, limit: number, upTo?: bigint): Promise<StoredEvent[]> {
  let q = db.selectFrom("events").select(EVENT_COLUMNS).where("seq", ">", after.toString() as never);
  if (upTo !== undefined) q = q.where("seq", "<=", upTo.toString() as never);
  const rows = await q.orderBy("seq").limit(limit).execute();
  return rows.map((r) => decodeRow(r as EventRow));
}

/** The highest stored seq, 0 when there is none. */
export async function headSeq(db: Db): Promise<bigint> {
  const r = await sql<{ m: string | number | bigint | null }>`SELECT max(seq) AS m FROM events`.execute(db);
  const m = r.rows[0]?.m;
  return m === null || m === undefined ? 0n : toSeq(m);
}

/** Events with seq <= the result were pruned (0: nothing pruned). */
export async function prunedThrough(db: Db): Promise<bigint> {
  const row = await db.selectFrom("event_retention").select("pruned_through").where("id", "=", 1).executeTakeFirst();
  return row ? toSeq(row.pruned_through) : 0n;
}

/** The smallest retained seq, or undefined when the outbox is empty. */
export async function oldestSeq(db: Db): Promise<bigint | undefined> {
  const r = await sql<{ m: string | number | bigint | null }>`SELECT min(seq) AS m FROM events`.execute(db);
  const m = r.rows[0]?.m;
  return m === null || m === undefined ? undefined : toSeq(m);
}

export async function readRelayCursor(db: Db, stream: string): Promise<bigint> {
  await db
    .insertInto("relay_cursor")
    .values({ stream, last_seq: "0", updated_at: new Date() })
    .onConflict((oc) => oc.column("stream").doNothing())
    .execute();
  const row = await db.selectFrom("relay_cursor").select("last_seq").where("stream", "=", stream).executeTakeFirstOrThrow();
  return toSeq(row.last_seq);
}

/**
 * Advances the cursor from `from` to `to` (compare-and-set). False when the stored cursor is
 * no longer `from`: another relay instance advanced it, so this one is no longer the leader.
 */
export async function advanceRelayCursor(db: Db, stream: string, from: bigint, to: bigint): Promise<boolean> {
  const r = await db
    .updateTable("relay_cursor")
    .set({ last_seq: to.toString(), updated_at: new Date() })
    .where("stream", "=", stream)
    .where("last_seq", "=", from.toString())
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
