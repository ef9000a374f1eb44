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
 * (src/delivery/sequencer.ts), so a reader never skips an event; a notification says the rows
 * are numbered already.
 *
 * Subscribers get a bounded buffer. One that falls more than maxBufferedEvents (or
 * maxBufferedBytes) behind is ended with RESOURCE_EXHAUSTED / SUBSCRIBER_TOO_SLOW carrying
 * last_seq; resuming after last_seq loses nothing. Events are never silently dropped.
 *
 * Event objects are shared by all subscribers: treat them as immutable.
 */
import type { Logger } from "pino";
import { BerthError } from "../platform/errors.js";
import type { Db } from "../platform/database.js";
import { compileFilter, type EventFilter, type Matcher } from "./filter.js";
import { CommitListener, type CommitListenerOptions } from "./commit-listener.js";
import { EVENTS_CHANNEL, sequencePending } from "./sequencer.js";
import { oldestSeq, prunedThrough, readEvents, type Event, type StoredEvent } from "./event-store.js";

export interface SubscriberOptions {
  /** Events a subscriber may have buffered before it is ended as too slow (default 10,000). */
  readonly maxBufferedEvents?: number;
  /** Stored bytes a subscriber may have buffered before it is ended as too slow (default 16 MiB). */
  readonly maxBufferedBytes?: number;
}

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
}

export interface StreamRequest {
  /** Deliver events with seq > afterSeq (0: every retained event). */
  readonly afterSeq: bigint;
  readonly filter: EventFilter;
}

const DEFAULT_MAX_EVENTS = 10_000;
const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;
const DEFAULT_POLL_MS = 2000;

function cancelled(): BerthError {
  return new BerthError("cancelled", "CANCELLED", "the call was cancelled");
}

/** Resolves with `p`, or rejects CANCELLED as soon as `signal` aborts. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => {}); // the caller has gone: p's outcome, failure included, is nobody's now (as after a later abort below)
    return Promise.reject(cancelled());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(cancelled());
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

export function tooSlow(lastSeq: bigint, limit: string): BerthError {
  return new BerthError(
    "resource_exhausted",
    "SUBSCRIBER_TOO_SLOW",
    `the subscriber fell more than ${limit} behind; resume with after_seq=${lastSeq}`,
    { last_seq: lastSeq.toString() },
  );
}

/** A subscriber's bounded buffer. */
export class Subscription {
  private queue: StoredEvent[] = [];
  private head = 0;
  private bytes = 0;
  private wake: (() => void) | undefined;
  /** Set when the subscriber overflowed ("N events"/"N bytes") or the hub stopped. */
  private failure: { kind: "overflow"; limit: string } | { kind: "stopped" } | undefined;
  /** Seq of the last event handed to the consumer (the caller keeps it exact during replay). */
  lastSeq: bigint;

  constructor(
    readonly match: Matcher,
    /** The hub's position when subscribed: events after it arrive through this buffer. */
    readonly from: bigint,
    private readonly maxEvents: number,
    private readonly maxBytes: number,
  ) {
    this.lastSeq = from;
  }

  get buffered(): number {
    return this.queue.length - this.head;
  }

  /** Called by the hub for every event, in seq order. */
  offer(se: StoredEvent): void {
    if (this.failure || !this.match(se.event)) return;
    if (this.buffered >= this.maxEvents || this.bytes + se.size > this.maxBytes) {
      this.failure = { kind: "overflow", limit: this.buffered >= this.maxEvents ? `${this.maxEvents} events` : `${this.maxBytes} bytes` };
      this.queue = [];
      this.head = 0;
      this.bytes = 0;
    } else {
      this.queue.push(se);
      this.bytes += se.size;
    }
    this.notify();
  }

  stop(): void {
    if (!this.failure) this.failure = { kind: "stopped" };
    this.queue = [];
    this.head = 0;
    this.notify();
  }

  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Throws if the subscriber has been ended (too slow, or the hub stopped). */
  check(): void {
    if (!this.failure) return;
    if (this.failure.kind === "overflow") throw tooSlow(this.lastSeq, this.failure.limit);
    throw new BerthError("unavailable", "SERVER_STOPPING", "the server is stopping; resume with after_seq=" + this.lastSeq.toString(), {
      last_seq: this.lastSeq.toString(),
    });
  }

  /** The next buffered event, waiting for one; cancellable by `signal`. */
  async next(signal: AbortSignal): Promise<StoredEvent> {
    for (;;) {
      this.check();
      if (this.head < this.queue.length) {
        const se = this.queue[this.head]!;
        this.queue[this.head++] = undefined as never;
        this.bytes -= se.size;
        if (this.head > 1024 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head);
          this.head = 0;
        }
        return se;
      }
      if (signal.aborted) throw cancelled();
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          this.wake = undefined;
          reject(cancelled());
        };
        this.wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
  }
}

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
  /** A nudge or a poll: number committed rows, then read. */
  private sequenceWanted = false;
  /** A notification: rows are numbered; read. */
  private readWanted = false;
  private readonly listener: CommitListener | undefined;
  private reading: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failing = false;
  /** Events handed to subscribers' consumers (WatchEvents, watch()), replay included; read by metrics. */
  delivered = 0;

  constructor(options: EventHubOptions) {
    this.db = options.db;
    this.logger = options.logger;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_MS;
    this.batchSize = options.batchSize ?? 500;
    this.maxEvents = options.maxBufferedEvents ?? DEFAULT_MAX_EVENTS;
    this.maxBytes = options.maxBufferedBytes ?? DEFAULT_MAX_BYTES;
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

  /** Wakes the reader (after a local commit that stored events). Cheap; coalesces. */
  nudge(): void {
    if (!this.started || this.stopped) return;
    this.sequenceWanted = true;
    this.wake();
  }

  /** Whether the hub is LISTENing now (false on PGlite, and while its connection is re-established). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  /** A sequencer pass (of any instance) numbered rows up to `payload`: read them unless already read. */
  private notified(payload: string): void {
    if (!this.started || this.stopped) return;
    // Our own pass's notification, or one overtaken by a read: nothing new.
    if (/^\d+$/.test(payload) && BigInt(payload) <= this.position) return;
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
    while ((this.sequenceWanted || this.readWanted) && !this.stopped) {
      const sequence = this.sequenceWanted;
      this.sequenceWanted = false;
      this.readWanted = false;
      try {
        for (;;) {
          if (sequence) await sequencePending(this.db, this.logger);
          const batch = await readEvents(this.db, this.position, this.batchSize);
          if (this.stopped) return;
          // position and fan-out change together, synchronously: a subscriber added between
          // batches replays up to `position` and receives everything after it here.
          for (const se of batch) {
            this.position = se.seq;
            for (const sub of this.subs) sub.offer(se);
          }
          if (batch.length < this.batchSize) break;
        }
        if (this.failing) this.logger.info("event hub: reading the outbox again");
        this.failing = false;
      } catch (err) {
        if (!this.failing) this.logger.warn({ err }, "event hub: reading the outbox failed; retrying on the next poll");
        this.failing = true;
        return;
      }
    }
  }

  /** Registers a buffered subscriber from the hub's current position. */
  subscribe(filter: EventFilter, options: SubscriberOptions = {}): Subscription {
    if (!this.started || this.stopped) throw new BerthError("unavailable", "EVENTS_UNAVAILABLE", "event delivery is not running");
    const sub = new Subscription(
      compileFilter(filter),
      this.position,
      options.maxBufferedEvents ?? this.maxEvents,
      options.maxBufferedBytes ?? this.maxBytes,
    );
    this.subs.add(sub);
    return sub;
  }

  unsubscribe(sub: Subscription): void {
    this.subs.delete(sub);
  }

  /**
   * Live events matching `filter`, from the moment of the call (the subscription is taken
   * synchronously, before the first next()). Ends by throwing: CANCELLED when `signal` aborts,
   * RESOURCE_EXHAUSTED (SUBSCRIBER_TOO_SLOW, metadata last_seq) when the consumer falls too far
   * behind, UNAVAILABLE when the hub stops. Breaking out of the loop unsubscribes.
   */
  watch(filter: EventFilter, signal: AbortSignal, options: SubscriberOptions = {}): AsyncIterable<Event> {
    const sub = this.subscribe(filter, options);
    const onAbort = (): void => this.unsubscribe(sub);
    signal.addEventListener("abort", onAbort, { once: true });
    return { [Symbol.asyncIterator]: () => this.deliver(sub, signal, onAbort) };
  }

  /** The loop behind watch(): yields `sub`'s events until it throws; always unsubscribes. */
  private async *deliver(sub: Subscription, signal: AbortSignal, onAbort: () => void): AsyncGenerator<Event> {
    try {
      for (;;) {
        const se = await sub.next(signal);
        sub.lastSeq = se.seq;
        this.delivered++;
        yield se.event;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.unsubscribe(sub);
    }
  }

  /**
   * Stored events after `afterSeq`, then live ones, with no gap and no duplicate (WatchEvents).
   * Subscribes first (buffering), replays the outbox up to the hub's position at that moment,
   * then drains the buffer, skipping what the replay already delivered.
   * OUT_OF_RANGE (EVENTS_PRUNED, metadata oldest_seq) when events after afterSeq were pruned.
   */
  async *stream(request: StreamRequest, signal: AbortSignal, options: SubscriberOptions = {}): AsyncGenerator<Event> {
    const sub = this.subscribe(request.filter, options);
    try {
      let last = request.afterSeq;
      sub.lastSeq = last;
      if (last > 0n) await abortable(this.assertRetained(last), signal);
      // Replay: (afterSeq, sub.from], paged.
      while (last < sub.from) {
        const page = await abortable(readEvents(this.db, last, this.batchSize, sub.from), signal);
        if (page.length === 0) break;
        for (const se of page) {
          sub.check();
          last = se.seq;
          sub.lastSeq = last;
          if (sub.match(se.event)) {
            this.delivered++;
            yield se.event;
          }
        }
      }
      // Live.
      for (;;) {
        const se = await sub.next(signal);
        if (se.seq <= last) continue;
        last = se.seq;
        sub.lastSeq = last;
        this.delivered++;
        yield se.event;
      }
    } finally {
      this.unsubscribe(sub);
    }
  }

  /** Throws OUT_OF_RANGE when events with seq > afterSeq have been pruned. */
  async assertRetained(afterSeq: bigint): Promise<void> {
    const pruned = await prunedThrough(this.db);
    if (afterSeq >= pruned) return;
    const oldest = (await oldestSeq(this.db)) ?? pruned + 1n;
    throw new BerthError(
      "out_of_range",
      "EVENTS_PRUNED",
      `events after seq ${afterSeq} have been pruned; the oldest retained event is seq ${oldest} (resume with after_seq=0 or ${oldest - 1n})`,
      { after_seq: afterSeq.toString(), oldest_seq: oldest.toString(), pruned_through: pruned.toString() },
    );
  }
}
