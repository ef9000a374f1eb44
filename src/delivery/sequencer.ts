/**
 * Numbers committed outbox rows. A pass, under a transaction-scoped advisory lock so passes
 * never interleave, gives every committed row with seq NULL the next numbers, in insert order
 * (`staged`), and commits. Readers read `seq > last`: a row committed later is numbered by a
 * later pass, above everything numbered before, so a reader never skips one. Causal order is
 * kept: a transaction that starts after another commits inserts after it, so its rows get
 * higher numbers. Any instance may run passes; the lock serialises them.
 */
import { sql } from "kysely";
import type { Db } from "../platform/database.js";
import { toSeq } from "../platform/schema.js";

/** Advisory lock key of the sequencer ("berth-sq"). */
export const SEQUENCER_LOCK_KEY = 0x62657274682d7371n & 0x7fffffffffffffffn;

const PASS_LIMIT = 5000;

/** Numbers committed, unnumbered rows; returns the highest seq now assigned (0 when none ever was). */
export async function sequencePending(db: Db): Promise<bigint> {
  for (;;) {
    const { numbered, head } = await db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(${sql.lit(SEQUENCER_LOCK_KEY.toString())}::bigint)`.execute(trx);
      // A fresh snapshot after the lock: everything an earlier pass numbered is visible.
      const r = await sql<{ numbered: string | number; head: string | number | bigint }>`
        WITH pending AS (
          SELECT staged, row_number() OVER (ORDER BY staged) AS rn
          FROM events WHERE seq IS NULL ORDER BY staged LIMIT ${PASS_LIMIT}
        ), moved AS (
          UPDATE outbox_head SET last_seq = last_seq + (SELECT count(*) FROM pending) WHERE id = 1
          RETURNING last_seq, last_seq - (SELECT count(*) FROM pending) AS base
        ), numbered AS (
          UPDATE events e SET seq = moved.base + pending.rn
          FROM pending, moved WHERE e.staged = pending.staged AND e.seq IS NULL
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM numbered) AS numbered, (SELECT last_seq FROM moved) AS head`.execute(trx);
      const row = r.rows[0]!;
      return { numbered: Number(row.numbered), head: toSeq(row.head) };
    });
    if (numbered < PASS_LIMIT) return head;
  }
}
