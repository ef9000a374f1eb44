import { describe, expect, it } from "vitest";
import { GroupCommit } from "../../src/platform/group-commit.js";

describe("GroupCommit", () => {
  it("flushes what is submitted in one event-loop turn together, and each submission gets its own outcome", async () => {
    const flushes: number[][] = [];
    const gc = new GroupCommit<number, number>(async (items) => {
      flushes.push([...items]);
      return items.map((n) => (n === 3 ? { status: "rejected", reason: new Error("three") } : { status: "fulfilled", value: n * 10 }));
    }, { maxBatch: 10, maxInFlight: 1 });
    const outcomes = await Promise.allSettled([1, 2, 3, 4].map((n) => gc.submit(n)));
    expect(flushes).toEqual([[1, 2, 3, 4]]);
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : (o.reason as Error).message))).toEqual([10, 20, "three", 40]);
  });

  it("gathers what arrives while a flush runs into the next one, at most maxBatch at a time", async () => {
    const flushes: number[][] = [];
    let release!: () => void;
    const firstRunning = new Promise<void>((r) => (release = r));
    const gc = new GroupCommit<number, number>(async (items) => {
      flushes.push([...items]);
      if (flushes.length === 1) await firstRunning;
      return items.map((value) => ({ status: "fulfilled", value }));
    }, { maxBatch: 3, maxInFlight: 1 });
    const first = gc.submit(0);
    await new Promise((r) => setImmediate(r));
    const rest = [1, 2, 3, 4, 5].map((n) => gc.submit(n));
    await new Promise((r) => setImmediate(r));
    expect(flushes).toEqual([[0]]);
    release();
    expect(await Promise.all([first, ...rest])).toEqual([0, 1, 2, 3, 4, 5]);
    expect(flushes).toEqual([[0], [1, 2, 3], [4, 5]]);
  });

  it("rejects every submission of a flush that throws, and keeps flushing afterwards", async () => {
    let fail = true;
    const gc = new GroupCommit<number, number>(async (items) => {
      if (fail) throw new Error("down");
      return items.map((value) => ({ status: "fulfilled", value }));
    }, { maxBatch: 10, maxInFlight: 2 });
    const outcomes = await Promise.allSettled([gc.submit(1), gc.submit(2)]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    fail = false;
    expect(await gc.submit(3)).toBe(3);
  });
});
