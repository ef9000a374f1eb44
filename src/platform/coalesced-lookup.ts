/**
 * Concurrent point lookups of one kind merged into shared queries (one round trip for many
 * callers). A key joins the next query to start after it was asked for, never one already
 * running, so every answer is read after its caller asked: as fresh as a query of its own, which
 * is what the reads that must see another instance's last commit need (docs/decisions.md,
 * "Write-through registry"). A lookup starts its query at once while fewer than `maxRunning`
 * run (a lone call waits for nothing); beyond that, keys asked for meanwhile wait and go
 * together in the next query to start, so under load one round trip answers many calls.
 */
import { GroupCommit } from "./group-commit.js";

export type BatchFetch<K, V> = (keys: readonly K[]) => Promise<ReadonlyMap<K, V>>;

export interface CoalescedLookupOptions {
  /** Queries in flight at once (each holds a database connection). */
  readonly maxRunning?: number;
  /** Keys per query at most. */
  readonly maxKeys?: number;
}

/** The batching is GroupCommit's (a batch never joins a flush already running); this adds the keyed read. */
export class CoalescedLookup<K, V> {
  private readonly batches: GroupCommit<K, V | undefined>;

  constructor(fetch: BatchFetch<K, V>, options: CoalescedLookupOptions = {}) {
    this.batches = new GroupCommit(
      async (keys) => {
        const values = await fetch([...new Set(keys)]);
        return keys.map((k) => ({ status: "fulfilled", value: values.get(k) }) as const);
      },
      { maxInFlight: Math.max(1, options.maxRunning ?? 4), maxBatch: Math.max(1, options.maxKeys ?? 256), gatherTurn: false },
    );
  }

  /** The value of `key` read by a query that started after this call; undefined when there is none. */
  get(key: K): Promise<V | undefined> {
    return this.batches.submit(key);
  }
}
