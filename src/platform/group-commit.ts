/**
 * Group commit: concurrent submissions share one flush (one statement, one transaction, one WAL
 * flush) instead of paying for one each. A submission's promise settles with its own outcome
 * once the flush that carried it has committed, so a caller still returns only after its own
 * rows are durable, and one item's failure is its own (the flush decides how: see `Flush`).
 *
 * Batches form by themselves: what is submitted while `maxInFlight` flushes run waits for the
 * next one, so an idle system flushes at once (no timer, no added latency) and a loaded one
 * flushes in larger batches. Submissions of the same event-loop turn are gathered first, unless
 * `gatherTurn` is false (a read that must not wait a turn: platform/coalesced-lookup.ts).
 */

/** Writes `items` and answers each one's outcome, in the same order (one per item). */
export type Flush<I, O> = (items: readonly I[]) => Promise<readonly PromiseSettledResult<O>[]>;

export interface GroupCommitOptions {
  /** The most items one flush carries. */
  readonly maxBatch: number;
  /** How many flushes may run at once (each holds a connection of the pool while it runs). */
  readonly maxInFlight: number;
  /** Wait for the rest of the event-loop turn before the first flush (default true). */
  readonly gatherTurn?: boolean;
}

interface Pending<I, O> {
  readonly item: I;
  readonly resolve: (value: O) => void;
  readonly reject: (reason: unknown) => void;
}

export class GroupCommit<I, O> {
  private queue: Pending<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly flush: Flush<I, O>,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Flushes running now (a flush may ask whether it runs alone). */
  get flushesInFlight(): number {
    return this.inFlight;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.options.gatherTurn === false) this.pump();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.run(batch);
    }
  }

  /** A flush ended: what waited goes now, before its callers hear of theirs (none waits a turn for them). */
  private next(): void {
    this.inFlight--;
    this.pump();
  }

  private async run(batch: readonly Pending<I, O>[]): Promise<void> {
    let outcomes: readonly PromiseSettledResult<O>[];
    try {
      outcomes = await this.flush(batch.map((p) => p.item));
      if (outcomes.length !== batch.length) throw new Error(`group commit: ${outcomes.length} outcomes for ${batch.length} items`);
    } catch (err) {
      this.next();
      for (const p of batch) p.reject(err);
      return;
    }
    this.next();
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.status === "fulfilled") p.resolve(o.value);
      else p.reject(o.reason);
    });
  }
}
