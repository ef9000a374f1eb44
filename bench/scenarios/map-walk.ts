/**
 * The workspace map walk of a 50,000-entry tree, depth and entries unlimited, through the
 * worker walker Berth uses (src/turns/map createWorkerWalker: walkTree in a worker thread,
 * result posted back), vs GNU `find DIR | wc -l` on the same tree, alternating, in the
 * harness process. Figure: median over rounds of find_time / walk_time (issue 16: ≥ 0.8). A
 * first walk and find warm the page cache and the worker. The note also gives the bound any
 * Node walker has: find_time / the time of bare readdirSync(withFileTypes) calls over the same
 * directories with nothing done with the result, timed in the same rounds.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { median, round, type Scenario } from "../lib/scenario.js";
import { createWorkerWalker } from "../../src/turns/map/index.js";

const ENTRIES = 50_000;
const ROUNDS = 7;

/** 20 top directories × 10 subdirectories × 249 files = 50,000 entries (200 + 20 dirs). */
function makeTree(): { root: string; dirs: string[] } {
  const root = mkdtempSync(path.join(tmpdir(), "berth-bench-map-"));
  const dirs = [root];
  let n = 0;
  for (let a = 0; a < 20; a++) {
    const da = path.join(root, `dir${a}`);
    mkdirSync(da);
    dirs.push(da);
    n++;
    for (let b = 0; b < 10; b++) {
      const db = path.join(da, `sub${b}`);
      mkdirSync(db);
      dirs.push(db);
      n++;
      for (let f = 0; f < 249 && n < ENTRIES; f++, n++) writeFileSync(path.join(db, `file${f}.ts`), "");
    }
  }
  return { root, dirs };
}

export const scenario: Scenario = {
  name: "map-walk",
  title: `Workspace map walk of a ${ENTRIES.toLocaleString("en-US")}-entry tree, depth unlimited, vs GNU find`,
  async run(ctx) {
    const { root, dirs } = makeTree();
    const walker = createWorkerWalker({ maxIdleWorkers: 1, prewarm: true });
    try {
      const find = () => {
        const t = performance.now();
        const out = execFileSync("sh", ["-c", `find "${root}" | wc -l`], { encoding: "utf8" });
        return { ms: performance.now() - t, count: Number(out.trim()) - 1 };
      };
      const walk = async () => {
        const t = performance.now();
        const r = await walker(root, { maxDepth: Infinity, maxEntries: Infinity });
        const ms = performance.now() - t;
        if (r.kind !== "ok") throw new Error(`walk failed: ${JSON.stringify(r)}`);
        return { ms, count: r.total, shown: r.listing.count };
      };
      const readdirOnly = () => {
        const t = performance.now();
        for (const d of dirs) readdirSync(d, { withFileTypes: true });
        return performance.now() - t;
      };
      const w0 = await walk();
      const f0 = find();
      if (w0.count !== f0.count || w0.shown !== w0.count) throw new Error(`walk saw ${w0.count} (${w0.shown} shown), find ${f0.count}`);
      const walks: number[] = [];
      const finds: number[] = [];
      const ratios: number[] = [];
      const readdirs: number[] = [];
      const bounds: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        let wm: number, fm: number;
        if (i % 2) {
          wm = (await walk()).ms;
          fm = find().ms;
        } else {
          fm = find().ms;
          wm = (await walk()).ms;
        }
        walks.push(wm);
        finds.push(fm);
        ratios.push(fm / wm);
        const rm = readdirOnly();
        readdirs.push(rm);
        bounds.push(fm / rm);
      }
      const ratio = median(ratios);
      const bound = median(bounds);
      ctx.log(`${f0.count} entries; walk ${walks.map((x) => x.toFixed(0)).join("/")} ms; find ${finds.map((x) => x.toFixed(0)).join("/")} ms; ratio ${ratio.toFixed(3)}; bare readdirSync ${readdirs.map((x) => x.toFixed(0)).join("/")} ms, find / readdir ${bound.toFixed(3)}`);
      return {
        rows: [
          {
            figure: `map walk (worker walker, unlimited) of ${f0.count.toLocaleString("en-US")} entries: median time`,
            value: round(median(walks), 1),
            unit: "ms",
            baseline: { name: "find DIR | wc -l", value: round(median(finds), 1), unit: "ms" },
            ratio: round(ratio),
            target: "find / walk ≥ 0.8",
            met: ratio >= 0.8,
            note: `${ROUNDS} alternating rounds after a warm-up of each; walk ${walks.map((x) => x.toFixed(0)).join(" / ")} ms; find ${finds.map((x) => x.toFixed(0)).join(" / ")} ms; bound: bare readdirSync(withFileTypes) of the ${dirs.length} directories ${readdirs.map((x) => x.toFixed(0)).join(" / ")} ms, find / readdir ${round(bound)}`,
          },
        ],
        commands: [`in-process: createWorkerWalker()(root, { maxDepth: Infinity, maxEntries: Infinity }) vs sh -c 'find ${root} | wc -l'`],
        runs: {},
        extra: { walks, finds, ratios, readdirs, bounds, entries: f0.count },
      };
    } finally {
      await walker.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};
