/**
 * The transactional outbox: every event is inserted by the transaction that makes the change
 * it reports, so an acknowledged change has its events and a rolled-back one has none.
 *
 * Ordering: a bigserial is assigned at insert, not at commit, so without care a reader could
 * see seq 12 committed before seq 11 and skip 11 forever. appendEvents therefore takes a
 * transaction-scoped advisory lock before inserting; it is held until commit, so whichever
 * transaction inserts events next gets a higher seq only after this one has committed.
 * Callers append events as the last statements of their transaction to keep the lock short.
 *
 * Why this is enough: PostgreSQL makes a committing transaction visible before it releases its
 * locks, so when the next appender obtains the lock (and only then calls nextval) the previous
 * appender's rows are already visible. Hence any snapshot that sees seq N also sees every
 * committed seq < N, and a reader polling `seq > last` never skips. Sequence values of rolled
 * back transactions leave holes, which readers simply pass over. Every insert into `events`
 * must go through appendEvents (test/events/hub.test.ts holds one transaction open while
 * another commits to check it).
 */
import { randomUUID } from "node:crypto";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { sql, type Transaction } from "kysely";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import type { Database } from "../storage/schema.js";

/** Advisory lock key that serialises event appends ("berth-ev"). */
export const OUTBOX_LOCK_KEY = 0x62657274682d6576n & 0x7fffffffffffffffn;

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

export async function appendEvents(trx: Transaction<Database>, inputs: readonly EventInput[]): Promise<void> {
  if (inputs.length === 0) return;
  await sql`SELECT pg_advisory_xact_lock(${sql.lit(OUTBOX_LOCK_KEY.toString())}::bigint)`.execute(trx);
  const rows = inputs.map((e) => {
    const id = randomUUID();
    const message = create(EventSchema, {
      id,
      kind: e.kind,
      repoId: e.repoId,
      sessionId: e.sessionId ?? "",
      workspaceId: e.workspaceId ?? "",
      agentId: e.agentId ?? "",
      changesetId: e.changesetId ?? "",
      occurredAt: timestampFromMs(e.occurredAt),
      reason: e.reason ?? "",
      ...(e.payload ? { payload: e.payload } : {}),
    });
    return {
      id,
      kind: e.kind,
      repo_id: e.repoId,
      session_id: e.sessionId ?? null,
      workspace_id: e.workspaceId ?? null,
      agent_id: e.agentId ?? null,
      changeset_id: e.changesetId ?? null,
      occurred_at: new Date(e.occurredAt),
      reason: e.reason ?? "",
      payload: toBinary(EventSchema, message),
    };
  });
  await trx.insertInto("events").values(rows).execute();
}
