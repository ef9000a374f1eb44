/**
 * Concurrent point lookups of one kind merged into shared queries (one round trip for many
 * callers). A key joins the next query to start after it was asked for, never one already
 * running, so every answer is read after its caller asked: as fresh as a query of its own, which
 * is what the reads that must see another instance's last commit need (docs/decisions.md,
 * "Write-through registry"). A lookup starts its query at once while fewer than `maxRunning`
 * run (a lone call waits for nothing); beyond that, keys asked for meanwhile wait and go
 * together in the next query to start, so under load one round trip answers many calls.
 */
export type BatchFetch<K, V> = (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>;

interface Waiter<V> {
  resolve(value: V | undefined): void;
  reject(err: unknown): void;
}

export interface CoalescedLookupOptions {
  /** Queries in flight at once (each holds a database connection). */
  readonly maxRunning?: number;
  /** Keys per query at most. */
  readonly maxKeys?: number;
}

export class CoalescedLookup<K, V> {
  private pending = new Map<K, Waiter<V>[]>();
  private running = 0;
  private readonly maxRunning: number;
  private readonly maxKeys: number;

  constructor(
    private readonly fetch: BatchFetch<K, V>,
    options: CoalescedLookupOptions = {},
  ) {
    this.maxRunning = Math.max(1, options.maxRunning ?? 4);
    this.maxKeys = Math.max(1, options.maxKeys ?? 256);
  }

  /** The value of `key` read by a query that started after this call; undefined when there is none. */
  get(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.pending.get(key);
      if (waiters === undefined) this.pending.set(key, [{ resolve, reject }]);
      else waiters.push({ resolve, reject });
      this.start();
    });
  }

  private start(): void {
    while (this.running < this.maxRunning && this.pending.size > 0) {
      let batch: Map<K, Waiter<V>[]>;
      if (this.pending.size <= this.maxKeys) {
        batch = this.pending;
        this.pending = new Map();
      } else {
        batch = new Map();
        for (const [k, w] of this.pending) {
          if (batch.size === this.maxKeys) break;
          batch.set(k, w);
          this.pending.delete(k);
        }
      }
      this.running++;
      this.fetch([...batch.keys()]).then(
        (values) => this.settle(batch, (w, k) => w.resolve(values.get(k))),
        (err: unknown) => this.settle(batch, (w) => w.reject(err)),
      );
    }
  }

  private settle(batch: Map<K, Waiter<V>[]>, each: (w: Waiter<V>, key: K) => void): void {
    this.running--;
    for (const [k, ws] of batch) for (const w of ws) each(w, k);
    // What waits was asked for while the batch ran: it goes at once.
    this.start();
  }
}
