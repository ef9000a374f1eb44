/**
 * Latency of symbol extraction on a 4 KiB TypeScript file (the WriteFile hot
 * path). Skipped unless BERTH_SYMBOLS_BENCH=1:
 *
 *   BERTH_SYMBOLS_BENCH=1 npx vitest run test/overlay/symbols.bench.test.ts
 */
import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { diffSymbols, extractSymbols, preloadSymbolGrammars } from "../../src/overlay/symbols/index.js";

function make4KiB(variant: string): string {
  let s =
    `import { randomUUID } from "node:crypto";\n\n` +
    `export interface Task { id: string; title: string; done: boolean }\n\n` +
    `export class TaskService {\n  private readonly tasks = new Map<string, Task>();\n\n`;
  for (let i = 0; s.length < 4096 - 400; i++) {
    s +=
      `  /** Updates task field ${i}. */\n  update_${i}(id: string, title: string): Task | undefined {\n` +
      `    const task = this.tasks.get(id);\n    if (!task) return undefined;\n` +
      `    const next = { ...task, title: title.trim() + "${i === 3 ? variant : ""}" };\n` +
      `    this.tasks.set(id, next);\n    return next;\n  }\n\n`;
  }
  return `${s}}\n\nexport const createTaskService = (): TaskService => new TaskService();\n`;
}

function summary(xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  const q = (f: number): string => (sorted[Math.min(sorted.length - 1, Math.floor(f * sorted.length))] ?? 0).toFixed(2);
  return `p50=${q(0.5)}ms p90=${q(0.9)}ms p99=${q(0.99)}ms max=${q(1)}ms n=${sorted.length}`;
}

describe.skipIf(process.env.BERTH_SYMBOLS_BENCH !== "1")("symbols benchmark", () => {
  it("4 KiB TypeScript: extract and diff after warm-up", { timeout: 600_000 }, async () => {
    await preloadSymbolGrammars(["typescript"]);
    const a = make4KiB("");
    const b = make4KiB("!");
    const iterations = Number(process.env.BERTH_SYMBOLS_BENCH_N ?? 2000);
    // Warm-up (JIT of the WASM parser). A unique suffix defeats the result cache.
    for (let i = 0; i < 300; i++) await diffSymbols("w.ts", `${a}// w${i}\n`, `${b}// w${i}\n`);

    const extract: number[] = [];
    const diffCold: number[] = [];
    const diffWrite: number[] = [];
    let previous = a;
    for (let i = 0; i < iterations; i++) {
      let t = performance.now();
      await extractSymbols("x.ts", `${i % 2 ? a : b}// e${i}\n`);
      extract.push(performance.now() - t);

      t = performance.now();
      await diffSymbols("x.ts", `${a}// d${i}\n`, `${b}// d${i}\n`);
      diffCold.push(performance.now() - t);

      // WriteFile sequence: the old content was the previous write's new content (cached).
      const next = `${i % 2 ? a : b}// s${i}\n`;
      t = performance.now();
      await diffSymbols("x.ts", previous, next);
      diffWrite.push(performance.now() - t);
      previous = next;
    }
    console.log(`content ${Buffer.byteLength(a)} bytes`);
    console.log(`extractSymbols (1 parse)          ${summary(extract)}`);
    console.log(`diffSymbols, both parsed          ${summary(diffCold)}`);
    console.log(`diffSymbols, old cached (1 parse) ${summary(diffWrite)}`);
    expect(extract.length).toBe(iterations);
  });
});
