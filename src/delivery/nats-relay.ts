/**
 * The NATS relay: publishes stored events, in seq order, to a JetStream stream.
 *
 * Its parts: the stream, the message format and the acknowledged, ordered publishing
 * (relay-publisher.ts); the cursor and the at-least-once rule (relay-cursor.ts); leadership, one
 * publishing instance (relay-leader.ts); its settings (relay-options.ts). This module is the run
 * loop that drives them:
 *
 * - What to publish: events numbered after the acknowledged seq, as a sequencer pass returns
 *   them or read from the outbox, woken by local commits (nudge), by other instances' numbering
 *   (notified) and by a safety-net poll.
 * - One leader: only the holder of the leader lock publishes; a standby retries the lock, a
 *   leader re-verifies it, and a cursor found moved by another instance deposes it.
 * - NATS down: publishes fail or time out, the relay backs off (capped) and retries; RPCs are
 *   unaffected and events wait in the outbox until NATS returns.
 */
import { numberedAfter, numberPending } from "./sequencer.js";
import { readEvents } from "./event-store.js";
import { RelayCursor } from "./relay-cursor.js";
import { RelayPublisher } from "./relay-publisher.js";
import { relaySettings, type NatsRelayOptions, type RelaySettings } from "./relay-options.js";

// The relay's importers know its parts' API as the relay's.
export { advisoryKey, leaderLockFor, PgAdvisoryLeader, SoleLeader, type LeaderLock } from "./relay-leader.js";
export type { NatsRelayOptions } from "./relay-options.js";
export { subjectOf } from "./relay-publisher.js";

export class NatsRelay {
  private readonly o: RelaySettings;
  private readonly cursor: RelayCursor;
  private readonly publisher: RelayPublisher;
  private leading = false;
  private lastVerified = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private sleeping: { done: () => void; wakeOnNudge: boolean } | undefined;
  private nudged = false;
  /** A nudge of a commit whose rows wait for a sequencer pass. */
  private passWanted = false;
  private failures = 0;

  constructor(options: NatsRelayOptions) {
    this.o = relaySettings(options);
    this.cursor = new RelayCursor(this.o.db, this.o.stream, this.o.logger, {
      leading: () => this.leading,
      stopped: () => this.stopped,
      depose: () => this.depose(),
    });
    this.publisher = new RelayPublisher(this.o, this.cursor, () => !this.stopped && this.leading);
  }

  /** The highest seq JetStream has acknowledged from this relay (0 before any). */
  get publishedSeq(): bigint {
    return this.cursor.acked;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /**
   * New events were committed locally: publish them now rather than at the next poll.
   * `numbered`: the commit numbered them itself (no sequencer pass needed for them).
   */
  nudge(numbered = false): void {
    this.nudged = true;
    if (!numbered) this.passWanted = true;
    if (this.sleeping?.wakeOnNudge) this.sleeping.done();
  }

  /**
   * A notification (the event hub's LISTEN): some instance's pass numbered rows up to `head`.
   * Events of other instances' commits reach the relay this way, as soon as they are numbered.
   */
  notified(head: bigint): void {
    if (head > this.cursor.acked) this.nudge(true);
  }

  /** Stops publishing, persists the cursor, releases leadership and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.sleeping?.done();
    // Closing the connection rejects an in-flight publish at once (it stays unacknowledged).
    await this.publisher.dropConnection();
    await this.loop;
    await this.cursor.settle();
    // Unsaved, the next leader republishes from the stored cursor; JetStream drops the duplicates.
    await this.cursor.save().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: could not save the cursor at stop"));
    await this.publisher.dropConnection();
    if (this.leading) await this.o.leader.release().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: releasing leadership failed"));
    this.leading = false;
  }

  /** Sleeps ms; stop() wakes it, and so does nudge() when `wakeOnNudge` (not during backoff). */
  private sleep(ms: number, wakeOnNudge = true): Promise<void> {
    if (this.stopped || (wakeOnNudge && this.nudged)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.sleeping = undefined;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.sleeping = { done, wakeOnNudge };
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!(await this.lead())) {
          // Not woken by nudges: a standby has nothing to publish, and the nudge flag it never
          // clears would turn the wait into a loop of lock attempts.
          await this.sleep(this.o.leaderIntervalMs, false);
          continue;
        }
        await this.publisher.ensureConnected();
        if (this.cursor.stored === undefined) await this.cursor.load();
        // Woken only by commits that numbered their own rows: a read suffices. Otherwise (a poll,
        // a commit left to the sequencer, the loop after a batch) number first: the hub numbers
        // committed rows too, but a relay running alone (its own process) must as well.
        const pass = this.passWanted || !this.nudged;
        this.nudged = false;
        this.passWanted = false;
        // What the pass numbered right after the acknowledged seq is published as the pass
        // returned it; the outbox is read only when something else comes first.
        const numbered = pass ? await numberPending(this.o.db, this.o.logger) : undefined;
        const fromPass = numbered === undefined ? [] : numberedAfter(numbered, this.cursor.acked);
        const caughtUp = numbered !== undefined && fromPass.length > 0 && fromPass.at(-1)!.seq === numbered.head;
        const batch = caughtUp ? fromPass : await readEvents(this.o.db, this.cursor.acked, this.o.batchSize);
        if (batch.length === 0) {
          await this.sleep(this.o.pollIntervalMs);
          continue;
        }
        await this.publisher.publishBatch(batch);
        this.cursor.saveInBackground();
        if (this.failures > 0) this.o.logger.info({ seq: this.cursor.acked.toString() }, "nats relay: publishing again");
        this.failures = 0;
        // A short batch read everything numbered: wait for the next nudge (or the poll) rather
        // than run a pass and a read at once, which an event committed meanwhile would wait behind.
        if (batch.length < this.o.batchSize) await this.sleep(this.o.pollIntervalMs);
      } catch (err) {
        if (this.stopped) break;
        this.failures++;
        const delay = Math.min(this.o.backoffMaxMs, this.o.backoffInitialMs * 2 ** Math.min(this.failures - 1, 16));
        const log = this.failures === 1 || this.failures % 10 === 0 ? "warn" : "debug";
        this.o.logger[log]({ err, attempt: this.failures, retryInMs: delay, seq: this.cursor.acked.toString() }, "nats relay: publishing failed; events wait in the outbox");
        await this.cursor.settle();
        await this.cursor.save().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: could not save the cursor"));
        this.publisher.recheckStream(); // re-check the stream (it may have been deleted)
        await this.sleep(delay, false);
      }
    }
  }

  /** Holds (or acquires) leadership, re-verifying it every leaderIntervalMs. */
  private async lead(): Promise<boolean> {
    const now = Date.now();
    if (this.leading) {
      if (now - this.lastVerified < this.o.leaderIntervalMs) return true;
      this.lastVerified = now;
      if (await this.o.leader.verify()) return true;
      this.o.logger.warn("nats relay: lost leadership");
      this.leading = false;
      this.cursor.stored = undefined;
      return false;
    }
    if (!(await this.o.leader.acquire())) return false;
    this.leading = true;
    this.lastVerified = now;
    this.cursor.stored = undefined; // another leader may have advanced it
    this.o.logger.info({ stream: this.o.stream }, "nats relay: leading");
    return true;
  }

  /** The cursor was moved by another instance (relay-cursor.ts): stop leading, release the lock. */
  private async depose(): Promise<void> {
    this.leading = false;
    await this.o.leader.release().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: releasing leadership failed"));
  }
}
