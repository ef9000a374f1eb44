/**
 * Numbers committed outbox rows. A pass, under a transaction-scoped advisory lock so passes
 * never interleave, gives every committed row with seq NULL the next numbers, in insert order
 * (`staged`), and commits. Readers read `seq > last`: a row committed later is numbered by a
 * later pass, above everything numbered before, so a reader never skips one. Causal order is
 * kept: a transaction that starts after another commits inserts after it, so its rows get
 * higher numbers. Any instance may run passes; the lock serialises them. How numbers are taken
 * (outbox_head's row lock held through the commit, the NOTIFY) is one rule in
 * src/platform/outbox.ts, shared with the statements that number their own rows.
 *
 * A pass that numbers rows also sends `NOTIFY berth_events` (payload: the new head seq) from
 * the same statement. PostgreSQL delivers it at the pass's commit, to every instance's hub
 * listening on the database (src/delivery/commit-listener.ts): listeners wake exactly when
 * there is something new to read, whoever numbered it (a hub or a relay, of any instance), and
 * many commits numbered by one pass cost one notification. A pass that numbers nothing sends
 * none, so a hub woken by a notification and running a pass itself does not echo.
 */
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../platform/database.js";
import { notifyHead, notifying, SEQUENCER_LOCK_KEY, takeSeqs } from "../platform/outbox.js";
import { toSeq } from "../platform/schema.js";

// The key and the channel belong to the outbox's numbering rule (src/platform/outbox.ts).
export { EVENTS_CHANNEL, SEQUENCER_LOCK_KEY } from "../platform/outbox.js";

/**
 * Rows one pass numbers at most: the first ones of events_unnumbered (migration 0016), in the
 * order it keeps. A literal, not a parameter: with `LIMIT $1`, the prepared statement's generic
 * plan (from its sixth run) could walk events_pkey from the oldest row filtering `seq IS NULL`,
 * i.e. read the whole outbox on every pass (auto_explain: 1,352 rows read for 79 numbered).
 */
const PASS_LIMIT = 5000;

/** Per database: the pass running in this process, and the one queued behind it. */
interface Flights {
  running?: Promise<bigint>;
  queued?: Promise<bigint>;
}
const flights = new WeakMap<Db, Flights>();

/**
 * Numbers committed, unnumbered rows; returns the highest seq now assigned (0 when none ever was).
 * `logger` hears of a notification that could not be sent (numbering goes on without it).
 *
 * Callers in one process share passes: one commit nudges both the hub and the relay, and two
 * passes would serialise on the lock, the second numbering nothing after waiting for the
 * first's commit. A caller joins the queued pass, whose statements are not sent yet (so its
 * snapshot is taken after the call and sees every commit the caller saw), else queues one
 * behind the running pass. The queued pass starts a turn of the event loop later, so callers
 * woken by the same commit land in it.
 */
export function sequencePending(db: Db, logger?: Logger): Promise<bigint> {
  let f = flights.get(db);
  if (!f) flights.set(db, (f = {}));
  if (f.queued) return f.queued;
  const state = f;
  const queued: Promise<bigint> = (async () => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    // Its failure is its callers'; this pass is tried on its own.
    await state.running?.catch(() => undefined);
    state.queued = undefined;
    const run = numberAll(db, logger);
    state.running = run;
    try {
      return await run;
    } finally {
      if (state.running === run) state.running = undefined;
    }
  })();
  state.queued = queued;
  return queued;
}

async function numberAll(db: Db, logger?: Logger): Promise<bigint> {
  for (;;) {
    const result = await notifying((notify) => pass(db, notify), logger);
    if (result.numbered < PASS_LIMIT) return result.head;
  }
}

async function pass(db: Db, notify: boolean): Promise<{ numbered: number; head: bigint }> {
  return db.transaction().execute(async (trx) => {
    // One plan for the pass whatever the statistics say (this transaction only): the unnumbered
    // rows walked in events_unnumbered's order by a plain index scan, each updated through
    // events_pkey. Statistics taken during a burst of unnumbered rows (a startup reconcile) made
    // the planner hash-join a sequential scan of the whole outbox on every pass; and a bitmap
    // scan re-reads every entry that numbered rows left dead in the index until VACUUM, while a
    // plain index scan marks those dead to everybody as it passes them, so later passes skip them.
    await sql`SELECT pg_advisory_xact_lock(${sql.lit(SEQUENCER_LOCK_KEY.toString())}::bigint),
      set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
      set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`.execute(trx);
    // A fresh snapshot after the lock: everything an earlier pass numbered is visible. With
    // nothing to number the pass writes nothing (no xid, no WAL flush at its commit) and answers
    // the head of its snapshot: a writer numbering its own rows may have committed higher ones
    // since, which a reader of `seq > head` still gets.
    const r = await sql<{ numbered: string | number; head: string | number | bigint }>`
      WITH pending AS (
        SELECT staged, row_number() OVER (ORDER BY staged) AS rn
        FROM events WHERE seq IS NULL ORDER BY staged LIMIT ${sql.lit(PASS_LIMIT)}
      ), moved AS (${takeSeqs(sql`SELECT count(*) FROM pending`)}
      ), numbered AS (
        UPDATE events e SET seq = moved.base + pending.rn
        FROM pending, moved WHERE e.staged = pending.staged AND e.seq IS NULL
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM numbered) AS numbered,
        COALESCE((SELECT head FROM moved), (SELECT last_seq FROM outbox_head WHERE id = 1)) AS head,
        ${notifyHead(notify, sql`(SELECT head FROM moved)`)} AS notified`.execute(trx);
    const row = r.rows[0]!;
    return { numbered: Number(row.numbered), head: toSeq(row.head) };
  });
}
