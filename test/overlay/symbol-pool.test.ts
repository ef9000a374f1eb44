import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { BerthError } from "../../src/platform/errors.js";
import { SymbolPool } from "../../src/overlay/symbols/pool.js";

const enc = new TextEncoder();
const before = `export class TaskService {\n  create(t: string) {\n    return t;\n  }\n  close() {}\n}\nexport function helper() {}\n`;
const after = before.replace("return t;", "return t + '!';").replace("helper() {}", "helper() {}\nexport const added = 1;");

/** before → after, as the in-process diff gives it on a warm parser. */
const CHANGES = [
  { name: "TaskService.create", kind: "method", change: "modified" },
  { name: "added", kind: "const", change: "added" },
];

const markers = mkdtempSync(join(tmpdir(), "berth-symbol-pool-"));
process.env.SYMBOL_TEST_MARKERS = markers;
const MISBEHAVING = new URL("./fixtures/misbehaving-symbol-worker.ts", import.meta.url);

const pools: SymbolPool[] = [];
function pool(options: ConstructorParameters<typeof SymbolPool>[0] = {}): SymbolPool {
  const p = new SymbolPool(options);
  pools.push(p);
  return p;
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
afterAll(() => rmSync(markers, { recursive: true, force: true }));

describe("SymbolPool", () => {
  it("gives the symbol changes of the in-process diff, for many paths over two workers", async () => {
    const p = pool({ workers: 2 });
    const paths = Array.from({ length: 12 }, (_, i) => `src/f${i}.ts`);
    const got = await Promise.all(paths.map((path) => p.diff(path, enc.encode(before), enc.encode(after))));
    for (const g of got) expect(g).toEqual(CHANGES);
    expect(await p.diff("src/new.ts", undefined, enc.encode(before))).toEqual([
      { name: "TaskService", kind: "class", change: "added" },
      { name: "TaskService.create", kind: "method", change: "added" },
      { name: "TaskService.close", kind: "method", change: "added" },
      { name: "helper", kind: "function", change: "added" },
    ]);
    expect(await p.diff("src/gone.py", enc.encode("def f():\n  pass\n"), undefined)).toEqual([{ name: "f", kind: "function", change: "deleted" }]);
    // Binary content has no symbols; a file without a grammar is a whole-file unit.
    expect((await p.diff("src/bin.ts", enc.encode(before), new Uint8Array([1, 0, 2]))).map((c) => `${c.name}:${c.change}`)).toEqual([
      "TaskService:deleted",
      "TaskService.create:deleted",
      "TaskService.close:deleted",
      "helper:deleted",
    ]);
    expect(await p.diff("README.md", undefined, enc.encode("# x\n"))).toEqual([{ name: "README.md", kind: "file", change: "added" }]);
    expect(p.stats()).toMatchObject({ workers: 2, spawned: 2, queued: 0 });
  });

  it("respawns a worker that dies: its other requests are answered by the new one, a request that killed two workers is the whole-file unit", async () => {
    const lost: string[] = [];
    const p = pool({ workers: 1, workerUrl: MISBEHAVING, onWorkerLost: (i) => lost.push(i.path ?? "") });
    const [fatal, behind] = await Promise.all([p.diff("die.ts", enc.encode(before), enc.encode(after)), p.diff("src/ok.ts", enc.encode(before), enc.encode(after))]);
    expect(fatal).toEqual([{ name: "die.ts", kind: "file", change: "modified" }]);
    expect(behind).toEqual(CHANGES);
    expect(lost).toEqual(["die.ts", "die.ts"]);

    writeFileSync(join(markers, "die-once"), "");
    expect(await p.diff("die-once.ts", enc.encode(before), enc.encode(after))).toEqual(CHANGES);
    expect(lost).toHaveLength(3);
  });

  it("replaces a worker that does not answer in time: that request is the whole-file unit, the next is parsed by the new worker", async () => {
    const lost: string[] = [];
    const p = pool({ workers: 1, workerUrl: MISBEHAVING, answerTimeoutMs: 2_000, onWorkerLost: (i) => lost.push(i.reason) });
    // Warm the worker first: its start (loader and grammars) is not what the timeout is for.
    await p.diff("src/warm.ts", undefined, enc.encode(before));
    const [hung, next] = await Promise.all([p.diff("hang.ts", enc.encode(before), enc.encode(after)), p.diff("src/next.ts", enc.encode(before), enc.encode(after))]);
    expect(hung).toEqual([{ name: "hang.ts", kind: "file", change: "modified" }]);
    expect(next).toEqual(CHANGES);
    expect(lost).toEqual(["no answer within 2000 ms"]);
    expect(p.stats().spawned).toBe(2);
  });

  it("close() fails what is waiting and every later diff with SHUTTING_DOWN", async () => {
    const p = pool({ workers: 1, workerUrl: MISBEHAVING, answerTimeoutMs: 60_000 });
    const waiting = expect(p.diff("hang.ts", enc.encode(before), enc.encode(after))).rejects.toSatisfy((e: unknown) => e instanceof BerthError && e.reason === "SERVER_SHUTTING_DOWN");
    await p.close();
    await waiting;
    await expect(p.diff("src/a.ts", undefined, enc.encode(before))).rejects.toSatisfy((e: unknown) => e instanceof BerthError && e.kind === "unavailable");
  });
});
