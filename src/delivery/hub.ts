/**
 * The event hub: one reader of the outbox per server process, fanning events out in memory.
 *
 * The reader keeps `position`: every stored event with seq <= position has been offered to
 * every subscriber that existed when it was read. It reads `seq > position ORDER BY seq` when
 * nudged (a local commit, through the unit of work's after-commit path), when notified (on
 * PostgreSQL it LISTENs on a dedicated connection, src/delivery/commit-listener.ts, for the
 * NOTIFY a sequencer pass sends when it numbers rows: other instances' commits arrive in
 * milliseconds), and every pollIntervalMs (the safety net: a missed notification, a listener
 * reconnecting). Before reading on a nudge or a poll it numbers what has committed
 * (src/delivery/sequencer.ts), so a reader never skips an event; a notification, or the nudge of
 * a commit that numbered its own rows, says the rows are numbered already. A local commit that
 * numbered its own events right after `position` needs no read at all: its events are the next
 * ones (numbers are taken in commit order, outbox.ts), and they are fanned out as committed.
 *
 * Delivery is pushed: for each event the reader runs one loop over the subscribers and each
 * matching one hands it synchronously to its sink; a subscriber's bounded buffer, and how it
 * ends when it falls too far behind, are src/delivery/subscription.ts. A subscriber resuming
 * after a seq is first handed what the store holds (src/delivery/replay.ts).
 *
 * Event objects are shared by all subscribers: treat them as immutable.
 */
import { setImmediate as yieldToIo } from "node:timers/promises";
import type { Logger } from "pino";
import { BerthError } from "../platform/errors.js";
import type { Db } from "../platform/database.js";
import type { NumberedCommit } from "../platform/outbox.js";
import { compileFilter, type EventFilter } from "./filter.js";
import { CommitListener, type CommitListenerOptions } from "./commit-listener.js";
import { EVENTS_CHANNEL, numberedAfter, numberPending, sequencePending } from "./sequencer.js";
import { readEvents, storedSize, type Event, type StoredEvent } from "./event-store.js";
import { PullQueue } from "../platform/pull-queue.js";
import { Subscription, type EventSink, type EventStream, type SubscriberOptions } from "./subscription.js";
import { assertRetained, replay } from "./replay.js";

// The subscriber side of the hub's API lives in subscription.ts; its importers know it as the hub's.
export { tooSlow, type EventSink, type EventStream, type SubscriberOptions } from "./subscription.js";

export interface EventHubOptions extends SubscriberOptions {
  readonly db: Db;
  readonly logger: Logger;
  /**
   * PostgreSQL connection string: the hub LISTENs there on a dedicated connection and reads as
   * soon as any instance's commits are numbered. Unset (PGlite: one process, one instance),
   * local commits nudge the hub and the poll covers the rest.
   */
  readonly listenUrl?: string;
  /** Safety-net poll period, for commits whose notification was missed (default 2,000 ms). */
  readonly pollIntervalMs?: number;
  /** Listener tuning (tests): reconnect backoff and connection checks. */
  readonly listener?: Pick<CommitListenerOptions, "backoffInitialMs" | "backoffMaxMs" | "connectTimeoutMs" | "pingIntervalMs" | "pingTimeoutMs">;
  /** Rows per outbox read (default 500); also the WatchEvents replay page size. */
  readonly batchSize?: number;
  /**
   * Told the head of every notification heard (any instance's pass numbered rows up to it), own
   * passes included: the NATS relay publishes other instances' events then, not at its poll.
   */
  readonly onNotified?: (head: bigint) => void;
}

export interface StreamRequest {
  /** Deliver events with seq > afterSeq (0: every retained event). */
  readonly afterSeq: bigint;
  readonly filter: EventFilter;
}

const DEFAULT_MAX_EVENTS = 10_000;
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
const DEFAULT_POLL_MS = 2000;
/**
 * Deliveries (subscribers × events) fanned out before the reader yields to I/O. What a stream
 * write queues is sent on the socket only after the loop returns to the event loop: fanning a
 * whole batch out in one go would hold every event's first bytes back until the last event's
 * last write (at 1,000 subscribers, ~8 ms per event), and the unary calls with them.
 */
const DELIVERIES_PER_TURN = 512;
/** Local numbered commits kept for fan-out without a read; beyond this the reader reads instead. */
const COMMITS_KEPT = 256;

export class EventHub {
  private readonly db: Db;
  private readonly logger: Logger;
  private readonly subs = new Set<Subscription>();
  private readonly pollIntervalMs: number;
  private readonly batchSize: number;
  private readonly maxEvents: number;
  private readonly maxBytes: number;
  private position = 0n;
  private started = false;
  private stopped = false;
  /** A nudge (of a commit that left its rows unnumbered) or a poll: number committed rows, then read. */
  private sequenceWanted = false;
  /** A notification, or a local numbered commit that does not follow `position`: read. */
  private readWanted = false;
  /** Local commits that numbered their own events, in commit order: fanned out without a read when they follow `position`. */
  private committed: NumberedCommit[] = [];
  /** A nudge's wake-up is queued for the next turn of the event loop. */
  private wakeQueued = false;
  /**
   * The head a pass of this reader numbered up to, which the read that follows it covers: a
   * notification of that pass (or of an earlier one) arriving during the read wants nothing.
   */
  private covered = 0n;
  private readonly listener: CommitListener | undefined;
  private readonly onNotified: ((head: bigint) => void) | undefined;
  private reading: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failing = false;
  /** Events handed to subscribers' consumers (WatchEvents, watch()), replay included; read by metrics. */
  delivered = 0;
  /** Reads of the outbox by the fan-out (replays not counted); read by metrics. */
  reads = 0;

  constructor(options: EventHubOptions) {
    this.db = options.db;
    this.logger = options.logger;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_MS;
    this.batchSize = options.batchSize ?? 500;
    this.maxEvents = options.maxBufferedEvents ?? DEFAULT_MAX_EVENTS;
    this.maxBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BYTES;
    this.onNotified = options.onNotified;
    if (options.listenUrl) {
      this.listener = new CommitListener({
        ...options.listener,
        url: options.listenUrl,
        channel: EVENTS_CHANNEL,
        logger: this.logger,
        onNotify: (payload) => this.notified(payload),
        // (Re)connected: what was notified while not listening was missed; read once.
        onListening: () => this.nudge(),
      });
    }
  }

  /** Starts at the current head of the outbox: earlier events are only available by replay. */
  async start(): Promise<void> {
    if (this.started) return;
    try {
      // LISTEN before the first read: what is numbered after it is notified, what was before is read.
      await this.listener?.start();
      this.position = await sequencePending(this.db, this.logger);
    } catch (err) {
      await this.listener?.stop();
      throw err;
    }
    this.started = true;
    this.timer = setInterval(() => this.nudge(), this.pollIntervalMs);
    this.timer.unref();
  }

  /** Ends every subscription (UNAVAILABLE with last_seq), stops reading, UNLISTENs and closes the listener's connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const sub of this.subs) sub.stop();
    this.subs.clear();
    // Only waits for the reader to end: pump() logs its own failures.
    await Promise.all([this.listener?.stop(), this.reading?.catch(() => {})]);
  }

  /**
   * Wakes the reader (after a local commit that stored events). Cheap; coalesces. `numbered`:
   * the commit numbered its events itself (no sequencer pass on its path), and which numbers:
   * if everything before them has been fanned out, they are fanned out without a read.
   */
  nudge(numbered?: NumberedCommit): void {
    if (!this.started || this.stopped) return;
    if (numbered === undefined) {
      this.sequenceWanted = true;
      return this.wake();
    }
    if (this.committed.length < COMMITS_KEPT) this.committed.push(numbered);
    else this.readWanted = true;
    // A fan-out within one turn's share (DELIVERIES_PER_TURN) happens now, before the commit's
    // callers answer; a larger one after this turn, so that their responses are not held back by
    // it (1,000 subscribers take ~10 ms), and the commits of one turn fan out together.
    if (numbered.events.length * this.subs.size <= DELIVERIES_PER_TURN && !this.wakeQueued) return this.wake();
    if (!this.wakeQueued) {
      this.wakeQueued = true;
      setImmediate(() => {
        this.wakeQueued = false;
        this.wake();
      });
    }
  }

  /** Whether the hub is LISTENing now (false on PGlite, and while its connection is re-established). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  /** A sequencer pass (of any instance) numbered rows up to `payload`: read them unless already read. */
  private notified(payload: string): void {
    if (!this.started || this.stopped) return;
    const head = /^\d+$/.test(payload) ? BigInt(payload) : undefined;
    if (head !== undefined) this.onNotified?.(head);
    // Our own pass's notification, or one overtaken by a read: nothing new.
    if (head !== undefined && head <= (this.covered > this.position ? this.covered : this.position)) return;
    this.readWanted = true;
    this.wake();
  }

  private wake(): void {
    if (!this.reading) this.reading = this.pump().finally(() => (this.reading = undefined));
  }

  /** Every stored event with seq <= this has been fanned out. */
  get headSeq(): bigint {
    return this.position;
  }

  get subscriberCount(): number {
    return this.subs.size;
  }

  /** Resolves once the reader has caught up with everything committed before the call. */
  async sync(): Promise<void> {
    this.nudge();
    while (this.reading) await this.reading;
  }

  private async pump(): Promise<void> {
    while ((this.sequenceWanted || this.readWanted || this.committed.length > 0) && !this.stopped) {
      try {
        // Local commits that follow what was fanned out: their events as committed, no read.
        for (let local = this.nextCommitted(); local !== undefined; local = this.nextCommitted()) {
          if (!(await this.fanOut(local))) return;
        }
        if (!this.sequenceWanted && !this.readWanted) continue;
        const sequence = this.sequenceWanted;
        this.sequenceWanted = false;
        this.readWanted = false;
        for (;;) {
          if (sequence) {
            const numbered = await numberPending(this.db, this.logger);
            this.covered = numbered.head;
            // What the pass numbered, if it follows what was fanned out: no read. Everything up to
            // its head is then out (a statement that numbered its own rows below the pass's
            // numbers committed before the pass could take them), and what commits later nudges.
            if (!(await this.fanOut(numberedAfter(numbered, this.position)))) return;
            if (this.position === numbered.head && !this.readWanted) break;
          }
          this.reads++;
          const batch = await readEvents(this.db, this.position, this.batchSize);
          if (!(await this.fanOut(batch))) return;
          if (batch.length < this.batchSize) break;
        }
        if (this.failing) this.logger.info("event hub: reading the outbox again");
        this.failing = false;
      } catch (err) {
        // What the pass numbered was not read: a notification of it must wake the reader again.
        this.covered = this.position;
        if (!this.failing) this.logger.warn({ err }, "event hub: reading the outbox failed; retrying on the next poll");
        this.failing = true;
        return;
      }
    }
  }

  /**
   * The events of the oldest kept local commit, numbered, when they are the next after
   * `position`; commits already read are passed over; one that does not follow (another
   * writer's events come between) is read instead, with every commit kept after it.
   */
  private nextCommitted(): StoredEvent[] | undefined {
    while (this.committed.length > 0) {
      const c = this.committed.shift()!;
      if (c.head <= this.position) continue;
      const base = c.head - BigInt(c.events.length);
      if (base !== this.position) {
        this.committed = [];
        this.readWanted = true;
        return undefined;
      }
      return c.events.map(({ row, event }, i) => {
        const seq = base + BigInt(i) + 1n;
        event.seq = seq;
        return { seq, event, size: storedSize(row.payload.byteLength, row.reason ?? "") };
      });
    }
    return undefined;
  }

  /** Hands `batch` (in seq order) to every subscriber; false when the hub stopped meanwhile. */
  private async fanOut(batch: readonly StoredEvent[]): Promise<boolean> {
    if (this.stopped) return false;
    // position and fan-out change together, synchronously: a subscriber added between
    // events replays up to `position` and receives everything after it here.
    let sinceYield = 0;
    for (const se of batch) {
      if (sinceYield >= DELIVERIES_PER_TURN) {
        sinceYield = 0;
        await yieldToIo();
        if (this.stopped) return false;
      }
      this.position = se.seq;
      for (const sub of this.subs) sub.offer(se);
      sinceYield += this.subs.size;
    }
    return true;
  }

  unsubscribe(sub: Subscription): void {
    this.subs.delete(sub);
  }

  /**
   * Stored events after `request.afterSeq`, then live ones, with no gap and no duplicate
   * (WatchEvents), handed to `sink` synchronously. Subscribes at once (buffering), replays the
   * outbox up to the hub's position at that moment, then drains the buffer, skipping what the
   * replay already delivered; from then on the fan-out loop hands each event straight to the
   * sink. The sink is ended with CANCELLED when `signal` aborts, OUT_OF_RANGE (EVENTS_PRUNED,
   * metadata oldest_seq) when events after afterSeq were pruned, RESOURCE_EXHAUSTED
   * (SUBSCRIBER_TOO_SLOW, metadata last_seq) when it refuses events for longer than its buffer
   * holds, UNAVAILABLE when the hub stops.
   */
  push(request: StreamRequest, sink: EventSink, signal: AbortSignal | undefined, options: SubscriberOptions = {}): EventStream {
    return this.open(request.filter, sink, request.afterSeq, signal, options, false);
  }

  /** The subscription behind push(), stream() and watch(); afterSeq undefined: live only. */
  private open(filter: EventFilter, sink: EventSink, afterSeq: bigint | undefined, signal: AbortSignal | undefined, options: SubscriberOptions, paused: boolean): Subscription {
    if (!this.started || this.stopped) throw new BerthError("unavailable", "EVENTS_UNAVAILABLE", "event delivery is not running");
    const sub = new Subscription(this, compileFilter(filter), this.position, sink, options.maxBufferedEvents ?? this.maxEvents, options.maxBufferedBytes ?? this.maxBytes, paused);
    this.subs.add(sub);
    if (signal !== undefined) sub.endOn(signal);
    if (afterSeq === undefined) sub.goLive();
    else if (!sub.isEnded) replay(this.db, sub, afterSeq, this.batchSize).catch((err: unknown) => sub.end(err));
    return sub;
  }

  /**
   * Live events matching `filter`, from the moment of the call (the subscription is taken
   * synchronously, before the first next()). Ends by throwing: CANCELLED when `signal` aborts,
   * RESOURCE_EXHAUSTED (SUBSCRIBER_TOO_SLOW, metadata last_seq) when the consumer falls too far
   * behind, UNAVAILABLE when the hub stops. Breaking out of the loop unsubscribes.
   */
  watch(filter: EventFilter, signal: AbortSignal, options: SubscriberOptions = {}): AsyncIterable<Event> {
    return this.pull(filter, undefined, signal, options);
  }

  /** push() for a `for await` consumer (Connect, in-process readers, tests): the same stream, pulled. */
  stream(request: StreamRequest, signal: AbortSignal, options: SubscriberOptions = {}): AsyncIterableIterator<Event> {
    return this.pull(request.filter, request.afterSeq, signal, options);
  }

  private pull(filter: EventFilter, afterSeq: bigint | undefined, signal: AbortSignal, options: SubscriberOptions): PullQueue<Event> {
    const q = new PullQueue<Event>();
    // Paused: an event is handed over only when the consumer asks for one; the rest waits in the
    // subscription's bounded buffer, as the slow-subscriber contract needs.
    q.source = this.open(filter, q, afterSeq, signal, options, true);
    return q;
  }

  /** Throws OUT_OF_RANGE when events with seq > afterSeq have been pruned. */
  assertRetained(afterSeq: bigint): Promise<void> {
    return assertRetained(this.db, afterSeq);
  }
}
