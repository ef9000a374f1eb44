/**
 * A symbol worker thread (pool.ts spawns it): answers { id, path, old, next } with the symbol
 * diff of the two contents, one request at a time in arrival order, so the pool's timeout of the
 * oldest request it is waiting for measures that request's own parse. It says { ready } once its
 * grammars are loaded and each has parsed a little: a fresh WebAssembly parser's first parses
 * are several times slower (code not yet tiered up) and would otherwise run into the parse
 * deadline on a loaded machine, making the first writes whole-file units. The worker that owns a
 * path keeps that path's last syntax tree (index.ts), so the next version parses incrementally.
 */
import { parentPort } from "node:worker_threads";
import { diffSymbolsOrFile, extractSymbols, preloadSymbolGrammars, symbolText, type SymbolChange } from "./index.js";

export interface SymbolRequest {
  readonly id: number;
  readonly path: string;
  /** The content before (undefined: the file did not exist) and after (undefined: deleted). */
  readonly old: Uint8Array | undefined;
  readonly next: Uint8Array | undefined;
}

export type SymbolAnswer = { readonly id: number; readonly changes: SymbolChange[] } | { readonly ready: true; readonly failed: string[] };

/** A few lines per grammar, for the warm-up. */
const SAMPLES: Record<string, string> = {
  "warm-up.ts": "export class A {\n  m(x: number): number {\n    return x + 1;\n  }\n}\nexport function f() {}\n",
  "warm-up.tsx": "export function C() {\n  return <div>{1}</div>;\n}\n",
  "warm-up.js": "class A {\n  m(x) {\n    return x + 1;\n  }\n}\nconst f = () => 1;\n",
  "warm-up.py": "class A:\n    def m(self, x):\n        return x + 1\n\ndef f():\n    pass\n",
  "warm-up.go": "package p\n\ntype A struct{ x int }\n\nfunc (a *A) M() int { return a.x + 1 }\n",
  "warm-up.rs": "struct A { x: i32 }\nimpl A {\n    fn m(&self) -> i32 { self.x + 1 }\n}\n",
  "warm-up.java": "class A {\n  int x;\n  int m() { return x + 1; }\n}\n",
};
const WARM_UP_ROUNDS = 4;

/** Resolves to the languages whose grammar failed to load (their files are whole-file units). */
async function warmUp(): Promise<string[]> {
  const failed = await preloadSymbolGrammars();
  for (let i = 0; i < WARM_UP_ROUNDS; i++) {
    // A different text each round: the symbol cache would answer a repeated one without parsing.
    for (const [path, text] of Object.entries(SAMPLES)) await extractSymbols(path, `${text}${"\n".repeat(i)}`);
  }
  return failed;
}

const port = parentPort;
if (!port) throw new Error("symbols/worker.ts must run as a worker thread");

// The warm-up runs while the server finishes starting; a request that comes first waits for it.
let chain: Promise<void> = warmUp().then((failed) => port.postMessage({ ready: true, failed } satisfies SymbolAnswer));
port.on("message", (req: SymbolRequest) => {
  chain = chain.then(async () => {
    // diffSymbolsOrFile never throws: every failure is the whole-file unit.
    const changes = await diffSymbolsOrFile(req.path, symbolText(req.old), symbolText(req.next));
    port.postMessage({ id: req.id, changes } satisfies SymbolAnswer);
  });
});
