import { describe, expect, it } from "vitest";
import { CoalescedLookup } from "../../src/platform/coalesced-lookup.js";

/** A fetch the test answers by hand: each call is recorded with the keys it asked for. */
function manualFetch() {
  const calls: { keys: string[]; answer(values: Record<string, number>): void; fail(err: Error): void }[] = [];
  const fetch = (keys: readonly string[]) =>
    new Promise<ReadonlyMap<string, number>>((resolve, reject) => {
      calls.push({ keys: [...keys], answer: (v) => resolve(new Map(Object.entries(v))), fail: reject });
    });
  return { calls, fetch };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe("CoalescedLookup", () => {
  it("starts a lone lookup at once, and answers those asked for while every slot is busy with one fetch", async () => {
    const f = manualFetch();
    const lookup = new CoalescedLookup(f.fetch, { maxRunning: 1 });
    const lone = lookup.get("a");
    expect(f.calls.map((c) => c.keys)).toEqual([["a"]]);
    const waiting = Promise.all([lookup.get("a"), lookup.get("b"), lookup.get("a"), lookup.get("missing")]);
    f.calls[0]!.answer({ a: 0 });
    expect(await lone).toBe(0);
    expect(f.calls.map((c) => c.keys)).toEqual([["a"], ["a", "b", "missing"]]);
    f.calls[1]!.answer({ a: 1, b: 2 });
    expect(await waiting).toEqual([1, 2, 1, undefined]);
  });

  it("never answers a lookup from a fetch that started before it was asked for", async () => {
    const f = manualFetch();
    const lookup = new CoalescedLookup(f.fetch, { maxRunning: 1 });
    const first = lookup.get("a");
    await turn();
    expect(f.calls).toHaveLength(1);
    // Asked for while the first fetch runs: the row may have changed since that fetch read it.
    const second = lookup.get("a");
    await turn();
    f.calls[0]!.answer({ a: 1 });
    expect(await first).toBe(1);
    await turn();
    expect(f.calls.map((c) => c.keys)).toEqual([["a"], ["a"]]);
    f.calls[1]!.answer({ a: 2 });
    expect(await second).toBe(2);
  });

  it("runs at most maxRunning fetches at once and at most maxKeys keys in one", async () => {
    const f = manualFetch();
    const lookup = new CoalescedLookup(f.fetch, { maxRunning: 2, maxKeys: 2 });
    const all = Promise.all(["a", "b", "c", "d", "e", "f", "g"].map((k) => lookup.get(k)));
    expect(f.calls.map((c) => c.keys)).toEqual([["a"], ["b"]]);
    f.calls[0]!.answer({ a: 1 });
    await turn();
    expect(f.calls.map((c) => c.keys)).toEqual([["a"], ["b"], ["c", "d"]]);
    f.calls[1]!.answer({ b: 2 });
    await turn();
    expect(f.calls.map((c) => c.keys)).toEqual([["a"], ["b"], ["c", "d"], ["e", "f"]]);
    f.calls[2]!.answer({ c: 3, d: 4 });
    await turn();
    f.calls[3]!.answer({ e: 5, f: 6 });
    await turn();
    f.calls[4]!.answer({ g: 7 });
    expect(f.calls.map((c) => c.keys)).toEqual([["a"], ["b"], ["c", "d"], ["e", "f"], ["g"]]);
    expect(await all).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it("rejects the lookups of a failed fetch only, and the next fetch still runs", async () => {
    const f = manualFetch();
    const lookup = new CoalescedLookup(f.fetch, { maxRunning: 1 });
    const failed = lookup.get("a");
    await turn();
    const later = lookup.get("b");
    f.calls[0]!.fail(new Error("connection lost"));
    await expect(failed).rejects.toThrow("connection lost");
    await turn();
    f.calls[1]!.answer({ b: 2 });
    expect(await later).toBe(2);
  });
});
