/**
 * The NATS relay's cursor: how far it has published, acknowledged and stored.
 *
 * At-least-once: the cursor (relay_cursor.last_seq in the database) only ever moves to an
 * acknowledged seq, acknowledged in order. It is saved in the background (after a batch, or
 * every cursorEvery events), never on the path from a commit to its publish: a save lost in a
 * crash costs repeats, not events. After a crash the relay republishes from the cursor;
 * JetStream drops the repeats by Nats-Msg-Id, and at start the relay also skips what the
 * stream's last message (its berth-seq header) shows was already stored (relay-publisher.ts),
 * so repeats do not depend on the duplicate window.
 *
 * The cursor advances by compare-and-set: finding it moved by another instance is how a deposed
 * leader learns it, so a save that fails that way gives up leadership through its relay.
 */
import type { Logger } from "pino";
import type { Db } from "../platform/database.js";
import { advanceRelayCursor, readRelayCursor } from "./event-store.js";

/** What the cursor needs of its relay. */
export interface CursorOwner {
  /** Only a leader moves the stored cursor. */
  leading(): boolean;
  /** A save asked for during another is not run once the relay stopped. */
  stopped(): boolean;
  /** The cursor was moved by another instance: stop leading and release the lock. */
  depose(): Promise<void>;
}

export class RelayCursor {
  /** Stored cursor, and the highest acknowledged seq (>= stored). */
  stored: bigint | undefined;
  acked = 0n;
  /** The cursor save in flight (one at a time), and whether another was asked for meanwhile. */
  private saving: Promise<void> | undefined;
  private saveAgain = false;

  constructor(
    private readonly db: Db,
    private readonly stream: string,
    private readonly logger: Logger,
    private readonly owner: CursorOwner,
  ) {}

  async load(): Promise<void> {
    const c = await readRelayCursor(this.db, this.stream);
    this.stored = c;
    this.acked = c;
  }

  /**
   * Saves the cursor without holding up publishing. Saves never overlap (the compare-and-set
   * needs the stored value of the previous one); one asked for during a save runs after it.
   */
  saveInBackground(): void {
    if (this.saving) {
      this.saveAgain = true;
      return;
    }
    this.saving = (async () => {
      do {
        this.saveAgain = false;
        await this.save();
      } while (this.saveAgain && this.owner.leading() && !this.owner.stopped());
    })()
      .catch((err: unknown) => {
        if (this.owner.leading()) this.logger.warn({ err, seq: this.acked.toString() }, "nats relay: could not save the cursor; retrying after the next batch");
      })
      .finally(() => (this.saving = undefined));
  }

  /** Waits for the background save, if any (its failure is already logged). */
  async settle(): Promise<void> {
    while (this.saving) await this.saving;
  }

  /** Moves the stored cursor to the acknowledged seq (compare-and-set). */
  async save(): Promise<void> {
    if (this.stored === undefined || this.acked <= this.stored || !this.owner.leading()) return;
    // Publishing goes on during the write: what is stored is what was written, not acked by then.
    const to = this.acked;
    const ok = await advanceRelayCursor(this.db, this.stream, this.stored, to);
    if (ok) {
      this.stored = to;
      return;
    }
    this.logger.warn({ stream: this.stream }, "nats relay: the cursor was moved by another instance; giving up leadership");
    this.stored = undefined;
    await this.owner.depose();
    throw new Error("relay cursor moved by another instance");
  }
}
