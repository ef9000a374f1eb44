/**
 * Resuming from the store: what a subscription that asks for events after a seq (WatchEvents'
 * after_seq) is handed before it goes live, read from the outbox in pages at its sink's pace,
 * and the retention check that refuses a resume whose events have been pruned.
 *
 * Apart from the hub's reader (hub.ts) because it reads on the subscriber's behalf, at the
 * subscriber's pace: the reader never waits for one subscriber, a replay waits for nothing else.
 */
import { BerthError } from "../platform/errors.js";
import type { Db } from "../platform/database.js";
import { oldestSeq, prunedThrough, readEvents } from "./event-store.js";
import type { Subscription } from "./subscription.js";

/** Replays (afterSeq, sub.from], paged, at the sink's pace; then the subscription goes live. */
export async function replay(db: Db, sub: Subscription, afterSeq: bigint, pageSize: number): Promise<void> {
  let last = afterSeq;
  sub.lastSeq = last;
  if (last > 0n) await assertRetained(db, last);
  while (last < sub.from && !sub.isEnded) {
    const page = await readEvents(db, last, pageSize, sub.from);
    if (page.length === 0) break;
    for (const se of page) {
      while (sub.isBlocked && !sub.isEnded) await sub.unblocked();
      if (sub.isEnded) return;
      last = se.seq;
      if (sub.match(se.event)) sub.hand(se);
      else sub.lastSeq = last;
    }
  }
  if (!sub.isEnded) sub.goLive();
}

/** Throws OUT_OF_RANGE when events with seq > afterSeq have been pruned. */
export async function assertRetained(db: Db, afterSeq: bigint): Promise<void> {
  const pruned = await prunedThrough(db);
  if (afterSeq >= pruned) return;
  const oldest = (await oldestSeq(db)) ?? pruned + 1n;
  throw new BerthError(
    "out_of_range",
    "EVENTS_PRUNED",
    `events after seq ${afterSeq} have been pruned; the oldest retained event is seq ${oldest} (resume with after_seq=0 or ${oldest - 1n})`,
    { after_seq: afterSeq.toString(), oldest_seq: oldest.toString(), pruned_through: pruned.toString() },
  );
}
