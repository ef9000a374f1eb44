/**
 * Retention: deletes events older than BERTH_EVENT_RETENTION_S, in chunks, periodically.
 *
 * Pruning always deletes a prefix of the outbox (in seq order, stopping at the first event that
 * is still young enough or not yet published to NATS), and records how far it went in
 * event_retention.pruned_through. So "after_seq >= pruned_through" exactly means nothing a
 * resuming subscriber needs is gone; WatchEvents answers OUT_OF_RANGE otherwise.
 */
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { Db } from "../platform/database.js";
import { toSeq } from "../platform/schema.js";
import { readRelayCursor } from "./event-store.js";

export interface EventPrunerOptions {
  readonly db: Db;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retentionSeconds: number;
  /** When the NATS relay runs: its stream, whose cursor bounds what may be pruned. */
  readonly relayStream?: string | undefined;
  /** Period (default 60 s). */
  readonly intervalMs?: number;
  /** Rows per delete (default 1,000). */
  readonly chunkSize?: number;
}

export class EventPruner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: EventPrunerOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.pruneOnce()
        .catch((err: unknown) => this.options.logger.warn({ err }, "event pruning failed; retrying next period"))
        .finally(() => (this.running = undefined));
    }, this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** One pass; returns how many events were deleted. */
  async pruneOnce(): Promise<number> {
    const { db, clock, retentionSeconds, relayStream } = this.options;
    const chunk = this.options.chunkSize ?? 1000;
    const cutoff = clock.now() - retentionSeconds * 1000;
    const published = relayStream !== undefined ? await readRelayCursor(db, relayStream) : undefined;
    let total = 0;
    for (;;) {
      const { deleted, more } = await db.transaction().execute(async (trx) => {
        // FOR UPDATE: concurrent pruners (several instances) take turns.
        const ret = await sql<{ p: string | number | bigint }>`SELECT pruned_through AS p FROM event_retention WHERE id = 1 FOR UPDATE`.execute(trx);
        const pruned = toSeq(ret.rows[0]?.p ?? 0);
        const rows = await trx
          .selectFrom("events")
          .select(["seq", "occurred_at"])
          .where("seq", ">", pruned.toString() as never)
          .orderBy("seq")
          .limit(chunk)
          .execute();
        let upTo = pruned;
        let blocked = false;
        for (const r of rows) {
          const seq = toSeq(r.seq!);
          if (new Date(r.occurred_at).getTime() >= cutoff || (published !== undefined && seq > published)) {
            blocked = true;
            break;
          }
          upTo = seq;
        }
        if (upTo === pruned) return { deleted: 0, more: false };
        const del = await trx
          .deleteFrom("events")
          .where("seq", ">", pruned.toString() as never)
          .where("seq", "<=", upTo.toString() as never)
          .executeTakeFirst();
        await trx.updateTable("event_retention").set({ pruned_through: upTo.toString() }).where("id", "=", 1).execute();
        return { deleted: Number(del.numDeletedRows), more: !blocked && rows.length === chunk };
      });
      total += deleted;
      if (!more || this.stopped) break;
    }
    if (total > 0) this.options.logger.info({ deleted: total }, "pruned events older than the retention");
    return total;
  }
}
