/**
 * One holder at a time per key, the others waiting in the order they asked: what serialises the
 * git work on one mirror within an instance (fetches, pushes, its ref bookkeeping), while work on
 * other keys runs alongside. A key's queue is forgotten once nobody holds or waits for it.
 */
export class KeyedMutex<K> {
  private readonly tails = new Map<K, Promise<void>>();

  /** Runs `work` once every earlier holder of `key` is done; a failing holder does not block the next. */
  async with<T>(key: K, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = before.then(() => mine);
    this.tails.set(key, tail);
    await before;
    try {
      return await work();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Whether someone holds or waits for `key` (tests, metrics). */
  busy(key: K): boolean {
    return this.tails.has(key);
  }
}
