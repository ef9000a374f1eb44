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
import { simpleQueryOf, type Db } from "../platform/database.js";
import { notifyHead, notifying, SEQUENCER_LOCK_KEY, takeSeqs } from "../platform/outbox.js";
import { toSeq } from "../platform/schema.js";
import { decodeRow, EVENT_COLUMNS, type EventRow, type StoredEvent } from "./event-store.js";

// The key and the channel belong to the outbox's numbering rule (src/platform/outbox.ts).
export { EVENTS_CHANNEL, SEQUENCER_LOCK_KEY } from "../platform/outbox.js";

/**
 * Rows one pass numbers at most: the first ones of events_unnumbered (migration 0016), in the
 * order it keeps. A literal, not a parameter: with `LIMIT $1`, the prepared statement's generic
 * plan (from its sixth run) could walk events_pkey from the oldest row filtering `seq IS NULL`,
 * i.e. read the whole outbox on every pass (auto_explain: 1,352 rows read for 79 numbered).
 */
const PASS_LIMIT = 5000;

/** What the passes of one call numbered: the head after them, and the rows they numbered, in seq order. */
export interface Numbered {
  readonly head: bigint;
  /** The rows numbered by these passes (not decoded: a reader uses them only if they follow what it has). */
  readonly rows: readonly EventRow[];
}

/**
 * The rows the passes numbered that follow `position` without a gap, decoded: what a reader at
 * `position` can hand out without reading the outbox (none when the first does not follow).
 */
export function numberedAfter(numbered: Numbered, position: bigint): StoredEvent[] {
  const out: StoredEvent[] = [];
  let next = position + 1n;
  for (const row of numbered.rows) {
    const seq = toSeq(row.seq);
    if (seq < next) continue;
    if (seq !== next) break;
    out.push(decodeRow(row));
    next++;
  }
  return out;
}

/** Per database: the pass running in this process, and the one queued behind it. */
interface Flights {
  running?: Promise<Numbered>;
  queued?: Promise<Numbered>;
}
const flights = new WeakMap<Db, Flights>();

/**
 * Numbers committed, unnumbered rows; returns the highest seq now assigned (0 when none ever was).
 * `logger` hears of a notification that could not be sent (numbering goes on without it).
 */
export async function sequencePending(db: Db, logger?: Logger): Promise<bigint> {
  return (await numberPending(db, logger)).head;
}

/**
 * sequencePending, with the rows the passes numbered: a reader whose position is just below the
 * first of them hands them out without reading the outbox (src/delivery/hub.ts).
 *
 * Callers in one process share passes: one commit nudges both the hub and the relay, and two
 * passes would serialise on the lock, the second numbering nothing after waiting for the
 * first's commit. A caller joins the queued pass, whose statements are not sent yet (so its
 * snapshot is taken after the call and sees every commit the caller saw), else queues one
 * behind the running pass. The queued pass starts a turn of the event loop later, so callers
 * woken by the same commit land in it.
 */
export function numberPending(db: Db, logger?: Logger): Promise<Numbered> {
  let f = flights.get(db);
  if (!f) flights.set(db, (f = {}));
  if (f.queued) return f.queued;
  const state = f;
  const queued: Promise<Numbered> = (async () => {
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

/**
 * Passes until one numbers fewer than PASS_LIMIT rows. Only the first pass's rows are kept: a
 * burst (a startup reconcile's 100,000 events) is then read by its readers a page at a time,
 * not held here at once.
 */
async function numberAll(db: Db, logger?: Logger): Promise<Numbered> {
  let rows: EventRow[] | undefined;
  for (;;) {
    const result = await notifying((notify) => pass(db, notify), logger);
    rows ??= result.rows;
    if (result.rows.length < PASS_LIMIT) return { head: result.head, rows };
  }
}

/**
 * One plan for the pass whatever the statistics say (its transaction only): the unnumbered
 * rows walked in events_unnumbered's order by a plain index scan, each updated through
 * events_pkey. Statistics taken during a burst of unnumbered rows (a startup reconcile) made the
 * planner hash-join a sequential scan of the whole outbox on every pass; and a bitmap scan
 * re-reads every entry that numbered rows left dead in the index until VACUUM, while a plain
 * index scan marks those dead to everybody as it passes them, so later passes skip them.
 */
const LOCK_AND_PLAN = sql`SELECT pg_advisory_xact_lock(${sql.lit(SEQUENCER_LOCK_KEY.toString())}::bigint),
  set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true),
  set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`;

type PassRow = Partial<EventRow> & { numbered: string | number; head: string | number | bigint };

/**
 * The pass's statement: takes the numbers, numbers the rows, and answers them (one row each, in
 * seq order, each carrying the count and the head; one row of NULLs and the head when there is
 * nothing to number). Run after LOCK_AND_PLAN in the same transaction, so that its snapshot,
 * taken after the lock, sees everything an earlier pass numbered. With nothing to number it
 * writes nothing (no xid, no WAL flush at its commit) and answers the head of its snapshot: a
 * writer numbering its own rows may have committed higher ones since, which a reader of
 * `seq > head` still gets. Every value is a literal: it has no parameters.
 */
function passStatement(notify: boolean) {
  const columns = sql.join(EVENT_COLUMNS.map((c) => sql.ref(`r.${c}`)));
  return sql<PassRow>`
      WITH pending AS (
        SELECT staged, row_number() OVER (ORDER BY staged) AS rn
        FROM events WHERE seq IS NULL ORDER BY staged LIMIT ${sql.lit(PASS_LIMIT)}
      ), moved AS (${takeSeqs(sql`SELECT count(*) FROM pending`)}
      ), numbered AS (
        UPDATE events e SET seq = moved.base + pending.rn
        FROM pending, moved WHERE e.staged = pending.staged AND e.seq IS NULL
        RETURNING e.*
      ), h AS (
        SELECT (SELECT count(*) FROM numbered) AS numbered,
          COALESCE((SELECT head FROM moved), (SELECT last_seq FROM outbox_head WHERE id = 1)) AS head,
          ${notifyHead(notify, sql`(SELECT head FROM moved)`)} AS notified
      )
      SELECT h.numbered, h.head, ${columns} FROM h LEFT JOIN numbered r ON true ORDER BY r.seq`;
}

/**
 * The pass's text for the simple protocol, by `notify`: its statements are constant, so each is
 * compiled once, not per pass (only PostgreSQL has the simple protocol, and its text is the same for every database).
 */
const simpleTexts = new Map<boolean, string>();

function simpleText(db: Db, notify: boolean): string {
  let text = simpleTexts.get(notify);
  if (text === undefined) {
    const lock = LOCK_AND_PLAN.compile(db);
    const statement = passStatement(notify).compile(db);
    if (lock.parameters.length > 0 || statement.parameters.length > 0) throw new Error("sequencer: the pass's statements must have no parameters");
    text = `${lock.sql};\n${statement.sql}`;
    simpleTexts.set(notify, text);
  }
  return text;
}

/**
 * On PostgreSQL one round trip: the lock and the statement sent together as one implicit
 * transaction (each statement still takes its own snapshot, the second after the lock). A failed
 * statement rolls the whole of it back. Elsewhere (PGlite, in process) a transaction of two.
 */
async function pass(db: Db, notify: boolean): Promise<{ head: bigint; rows: EventRow[] }> {
  const simple = simpleQueryOf(db);
  let result: PassRow[];
  if (simple) {
    const sets = await simple(simpleText(db, notify));
    result = sets[1] as PassRow[];
  } else {
    result = await db.transaction().execute(async (trx) => {
      await LOCK_AND_PLAN.execute(trx);
      return (await passStatement(notify).execute(trx)).rows;
    });
  }
  const first = result[0]!;
  return { head: toSeq(first.head), rows: Number(first.numbered) === 0 ? [] : (result as EventRow[]) };
}
