/**
 * Numbers committed outbox rows. A pass, under a transaction-scoped advisory lock so passes
 * never interleave, gives every committed row with seq NULL the next numbers, in insert order
 * (`staged`), and commits. Readers read `seq > last`: a row committed later is numbered by a
 * later pass, above everything numbered before, so a reader never skips one. Causal order is
 * kept: a transaction that starts after another commits inserts after it, so its rows get
 * higher numbers. Any instance may run passes; the lock serialises them.
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
import { toSeq } from "../platform/schema.js";

/** Advisory lock key of the sequencer ("berth-sq"). */
export const SEQUENCER_LOCK_KEY = 0x62657274682d7371n & 0x7fffffffffffffffn;

/** The channel a numbering pass notifies, and every hub listens on; the payload is the head seq. */
export const EVENTS_CHANNEL = "berth_events";

const PASS_LIMIT = 5000;

/**
 * A full notification queue (SQLSTATE 54000, "too many notifications in the NOTIFY queue":
 * some listener stopped reading) makes the commit of a notifying transaction fail. Numbering
 * must not stop for it: the pass is redone without the notification (listeners then learn of
 * it by their poll), and notifying is retried after this long.
 */
const NOTIFY_RETRY_MS = 10_000;
let notifyFailedAt: number | undefined;

function isNotifyQueueFull(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "54000";
}

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
    const notify = notifyFailedAt === undefined || Date.now() - notifyFailedAt >= NOTIFY_RETRY_MS;
    let result: { numbered: number; head: bigint };
    try {
      result = await pass(db, notify);
      if (notify && notifyFailedAt !== undefined) {
        notifyFailedAt = undefined;
        logger?.info("sequencer: NOTIFY works again; other instances hear of commits at once");
      }
    } catch (err) {
      if (!notify || !isNotifyQueueFull(err)) throw err;
      notifyFailedAt = Date.now();
      logger?.error({ err }, `sequencer: NOTIFY ${EVENTS_CHANNEL} failed (notification queue full: a listener is not reading); numbering without it, other instances fall back to their poll`);
      result = await pass(db, false);
    }
    if (result.numbered < PASS_LIMIT) return result.head;
  }
}

async function pass(db: Db, notify: boolean): Promise<{ numbered: number; head: bigint }> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${sql.lit(SEQUENCER_LOCK_KEY.toString())}::bigint)`.execute(trx);
    // A fresh snapshot after the lock: everything an earlier pass numbered is visible.
    // The NOTIFY (when rows were numbered) is queued by this statement and sent at commit.
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
      SELECT (SELECT count(*) FROM numbered) AS numbered, (SELECT last_seq FROM moved) AS head,
        CASE WHEN ${sql.lit(notify)} AND (SELECT count(*) FROM numbered) > 0
          THEN pg_notify(${sql.lit(EVENTS_CHANNEL)}, (SELECT last_seq FROM moved)::text) END AS notified`.execute(trx);
    const row = r.rows[0]!;
    return { numbered: Number(row.numbered), head: toSeq(row.head) };
  });
}
