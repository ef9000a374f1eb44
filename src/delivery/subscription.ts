/**
 * One subscriber of the event hub (hub.ts): its filter, its bounded buffer, its sink.
 *
 * Delivery is pushed: for each event the hub's reader runs one loop over the subscribers, and
 * each matching one hands it synchronously to its sink (the gRPC call's write, for
 * WatchEvents): no promise, generator or listener per subscriber per event. A sink that refuses
 * (write() false: the client is behind) pauses its subscription, which buffers until the sink's
 * drain resumes it. The buffer is bounded: a subscriber that falls more than maxBufferedEvents
 * (or maxBufferedBytes) behind is ended with RESOURCE_EXHAUSTED / SUBSCRIBER_TOO_SLOW carrying
 * last_seq (the last event its sink took); resuming after last_seq loses nothing. Events are
 * never silently dropped. Readers that pull (`for await`) get the same subscription through a
 * one-item PullQueue (src/platform/pull-queue.ts).
 *
 * Kept apart from the hub so that the per-subscriber contract (buffer bounds, pause and resume,
 * how a subscription ends) reads on its own: the hub only offers events and counts deliveries.
 */
import type { PullSource } from "../platform/pull-queue.js";
import { BerthError } from "../platform/errors.js";
import type { Matcher } from "./filter.js";
import type { Event, StoredEvent } from "./event-store.js";

export interface SubscriberOptions {
  /** Events a subscriber may have buffered before it is ended as too slow (default 10,000). */
  readonly maxBufferedEvents?: number;
  /** Stored bytes a subscriber may have buffered before it is ended as too slow (default 16 MiB). */
  readonly maxBufferedBytes?: number;
}

function cancelled(): BerthError {
  return new BerthError("cancelled", "CANCELLED", "the call was cancelled");
}

export function tooSlow(lastSeq: bigint, limit: string): BerthError {
  return new BerthError(
    "resource_exhausted",
    "SUBSCRIBER_TOO_SLOW",
    `the subscriber fell more than ${limit} behind; resume with after_seq=${lastSeq}`,
    { last_seq: lastSeq.toString() },
  );
}

function stopping(lastSeq: bigint): BerthError {
  return new BerthError("unavailable", "SERVER_STOPPING", "the server is stopping; resume with after_seq=" + lastSeq.toString(), {
    last_seq: lastSeq.toString(),
  });
}

/**
 * Where a subscription's events go. The hub calls deliver() synchronously from its fan-out
 * loop (one loop per event over every subscriber: no promise, no listener per event).
 */
export interface EventSink {
  /**
   * Takes one event (it counts as delivered: last_seq includes it). False: take no more now;
   * the hub buffers what follows (bounded) until the subscription's resume().
   */
  deliver(event: Event): boolean;
  /**
   * Called once when the subscription ends, synchronously: with the error that ends it
   * (CANCELLED, RESOURCE_EXHAUSTED SUBSCRIBER_TOO_SLOW, UNAVAILABLE, a replay failure), or
   * with nothing after close().
   */
  end(error?: unknown): void;
}

/** A subscription as its consumer holds it. */
/**
 * A subscription as its sink sees it: resume() (the sink can take events again: it is handed
 * what was buffered, until it refuses) and close() (the consumer has gone: unsubscribes; the
 * sink's end() is called without an error). The pull queue's source, so a queue can front it.
 */
export type EventStream = PullSource;

/** What a subscription needs of its hub. */
export interface SubscriptionOwner {
  delivered: number;
  unsubscribe(sub: Subscription): void;
}

/** A subscriber: its filter, its bounded buffer, its sink. */
export class Subscription implements EventStream {
  private queue: StoredEvent[] = [];
  private head = 0;
  private bytes = 0;
  /** Replay is over: offers go straight to the sink while nothing is buffered. */
  private live = false;
  /** The sink refused the last event: buffer until resume(). */
  private blocked: boolean;
  private ended = false;
  /** The replay waiting for resume(). */
  private unblock: (() => void) | undefined = undefined;
  private signal: AbortSignal | undefined = undefined;
  private readonly onAbort = (): void => this.end(cancelled());
  /** Seq of the last event handed to the sink (or passed over by the replay). */
  lastSeq: bigint;

  constructor(
    private readonly owner: SubscriptionOwner,
    readonly match: Matcher,
    /** The hub's position when subscribed: events after it arrive through offer(). */
    readonly from: bigint,
    private readonly sink: EventSink,
    private readonly maxEvents: number,
    private readonly maxBytes: number,
    paused: boolean,
  ) {
    this.lastSeq = from;
    this.blocked = paused;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  get isBlocked(): boolean {
    return this.blocked;
  }

  /** Cancellation is observed once per stream, not per event. */
  endOn(signal: AbortSignal): void {
    if (signal.aborted) return this.end(cancelled());
    this.signal = signal;
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  /** Called by the hub for every event, in seq order. */
  offer(se: StoredEvent): void {
    // A subscriber may ask to start after a seq the hub has not reached yet (another numbering
    // pass ran ahead of the hub's): what it already has is never handed again.
    if (this.ended || se.seq <= this.lastSeq || !this.match(se.event)) return;
    if (this.live && !this.blocked && this.head === this.queue.length) return this.hand(se);
    const n = this.queue.length - this.head;
    if (n >= this.maxEvents) return this.end(tooSlow(this.lastSeq, `${this.maxEvents} events`));
    if (this.bytes + se.size > this.maxBytes) return this.end(tooSlow(this.lastSeq, `${this.maxBytes} bytes`));
    this.queue.push(se);
    this.bytes += se.size;
  }

  /** Hands one event to the sink. */
  hand(se: StoredEvent): void {
    this.lastSeq = se.seq;
    this.owner.delivered++;
    if (!this.sink.deliver(se.event)) this.blocked = true;
  }

  /** Replay is over: drain what was buffered meanwhile (skipping what the replay delivered). */
  goLive(): void {
    this.live = true;
    this.drain();
  }

  resume(): void {
    if (this.ended) return;
    this.blocked = false;
    const w = this.unblock;
    this.unblock = undefined;
    w?.();
    if (this.live) this.drain();
  }

  /** Resolves once the sink takes events again, or the subscription ended. */
  unblocked(): Promise<void> {
    return new Promise((resolve) => (this.unblock = resolve));
  }

  private drain(): void {
    while (!this.blocked && !this.ended && this.head < this.queue.length) {
      const se = this.queue[this.head]!;
      this.queue[this.head++] = undefined as never;
      this.bytes -= se.size;
      if (se.seq > this.lastSeq) this.hand(se);
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  close(): void {
    this.end(undefined);
  }

  /** Ends the subscription once: unsubscribes, drops the buffer, tells the sink. */
  end(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.queue = [];
    this.head = 0;
    this.bytes = 0;
    this.signal?.removeEventListener("abort", this.onAbort);
    this.owner.unsubscribe(this);
    const w = this.unblock;
    this.unblock = undefined;
    w?.();
    this.sink.end(error);
  }

  /** The hub stopped. */
  stop(): void {
    this.end(stopping(this.lastSeq));
  }
}
