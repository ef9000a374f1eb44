/**
 * The pull side of a push producer. Event fan-out pushes (a producer calls `deliver` from its
 * own loop, synchronously, and stops when it returns false until told to resume); consumers
 * that read with `for await` pull. A PullQueue sits between them and holds at most one item:
 * it asks the producer for the next one only when the consumer waits (next() calls `resume`),
 * so whatever is not yet taken stays in the producer's own bounded buffer, and an item the
 * producer handed over is one the consumer gets (before the producer's error, if it ends).
 */
export interface PullSource {
  /** The consumer wants the next item: the producer may call deliver() (once) again. */
  resume(): void;
  /** The consumer has gone (break, return): the producer stops and forgets it. */
  close(): void;
}

const IDLE: PullSource = { resume() {}, close() {} };

export class PullQueue<T> implements AsyncIterableIterator<T> {
  /** Set by whoever wires the producer (it exists only once the queue has been handed to it). */
  source: PullSource = IDLE;
  private item: T | undefined = undefined;
  private has = false;
  private ended = false;
  private failure: { error: unknown } | undefined = undefined;
  private waiter: (() => void) | undefined = undefined;

  /** Producer side: one item; false, as the producer must hold the next until resume(). */
  deliver(item: T): boolean {
    this.item = item;
    this.has = true;
    this.wake();
    return false;
  }

  /** Producer side: no more items; with `error`, next() throws it once the handed item is taken. */
  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (error !== undefined) this.failure = { error };
    this.wake();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<T>> {
    if (!this.has && !this.ended) this.source.resume();
    while (!this.has && !this.ended) await new Promise<void>((r) => (this.waiter = r));
    if (this.has) {
      const v = this.item as T;
      this.item = undefined;
      this.has = false;
      return { done: false, value: v };
    }
    if (this.failure !== undefined) throw this.failure.error;
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<T>> {
    if (!this.ended) {
      this.ended = true;
      this.source.close();
    }
    this.item = undefined;
    this.has = false;
    // A next() waiting for an item ends now (a cancelled Connect stream), not never.
    this.wake();
    return { done: true, value: undefined };
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
