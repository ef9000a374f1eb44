/**
 * npm run bench [-- <scenario>... [--profile] [--rounds N] [--duration MS] [--warmup MS] [--list]]
 *
 * Runs the scenarios (all by default), writes bench/results/<scenario>.json and regenerates
 * BENCHMARKS.md. --profile starts Berth with --cpu-prof, prints where its time went and keeps
 * the profiles in bench/results/profiles/<scenario>/ (figures of a profiled run are not recorded).
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { dropAllBenchDatabases } from "./lib/database.js";
import { profilesIn, summarizeProfile } from "./lib/profile.js";
import { RESULTS_DIR, writeBenchmarks, writeResult } from "./lib/report.js";
import { machine, type Context } from "./lib/scenario.js";
import { killAllServers } from "./lib/servers.js";
import { PENDING, SCENARIOS } from "./scenarios/index.js";

function parse(argv: readonly string[]) {
  const names: string[] = [];
  const opts = { profile: false, list: false, report: false, rounds: 3, durationMs: 4_000, warmupMs: 1_500 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--profile") opts.profile = true;
    else if (a === "--list") opts.list = true;
    else if (a === "--report") opts.report = true;
    else if (a === "--rounds") opts.rounds = Number(argv[++i]);
    else if (a === "--duration") opts.durationMs = Number(argv[++i]);
    else if (a === "--warmup") opts.warmupMs = Number(argv[++i]);
    else if (a.startsWith("-")) throw new Error(`unknown option ${a}`);
    else names.push(a);
  }
  return { names, ...opts };
}

function reproduceCommand(name: string, o: ReturnType<typeof parse>): string {
  const extra = [
    o.rounds !== 3 ? `--rounds ${o.rounds}` : "",
    o.durationMs !== 4_000 ? `--duration ${o.durationMs}` : "",
    o.warmupMs !== 1_500 ? `--warmup ${o.warmupMs}` : "",
  ].filter(Boolean);
  return ["npm run bench --", name, ...extra].join(" ");
}

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  if (o.list) {
    for (const s of SCENARIOS) console.log(`${s.name.padEnd(24)} ${s.title}`);
    for (const p of PENDING) console.log(`${p.name.padEnd(24)} (pending: ${p.waitsFor}) ${p.title}`);
    return;
  }
  if (o.report) {
    // Only rewrite BENCHMARKS.md from bench/results/*.json (e.g. after editing bench/NOTES.md).
    writeBenchmarks(SCENARIOS, PENDING);
    console.log("BENCHMARKS.md written from bench/results/");
    return;
  }
  const unknown = o.names.filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length) {
    const pending = unknown.filter((n) => PENDING.some((p) => p.name === n));
    throw new Error(`unknown scenario(s) ${unknown.join(", ")}${pending.length ? ` (${pending.join(", ")} not implemented yet)` : ""}; --list shows them`);
  }
  const selected = o.names.length ? SCENARIOS.filter((s) => o.names.includes(s.name)) : SCENARIOS;
  mkdirSync(RESULTS_DIR, { recursive: true });
  const m = machine();
  console.log(`bench: ${selected.map((s) => s.name).join(", ")} — ${m.cpu}, ${m.cores} cores, Node ${m.node}, load average ${m.loadavg}`);
  const t0 = performance.now();
  const failed: string[] = [];
  for (const s of selected) {
    const reproduce = reproduceCommand(s.name, o);
    console.log(`\n== ${s.name}: ${s.title}\n   reproduce: ${reproduce}${o.profile ? " --profile" : ""}`);
    const profDir = o.profile ? path.join(RESULTS_DIR, "profiles", s.name) : undefined;
    if (profDir && existsSync(profDir)) rmSync(profDir, { recursive: true });
    const ctx: Context = {
      log: (msg) => console.log(`   ${msg}`),
      cpuProfDir: profDir,
      rounds: o.rounds,
      warmupMs: o.warmupMs,
      durationMs: o.durationMs,
    };
    const started = performance.now();
    const startMachine = machine();
    try {
      const report = await s.run(ctx);
      for (const c of report.commands) console.log(`   command: ${c}`);
      for (const r of report.rows) {
        const vs = r.baseline ? ` vs ${r.baseline.name} ${Math.round(r.baseline.value)} ${r.baseline.unit}` : "";
        const met = r.met === undefined ? "" : r.met ? "  MET" : "  MISSED";
        console.log(`   → ${r.figure}: ${Math.round(r.value * 1000) / 1000} ${r.unit}${vs}${r.ratio !== undefined ? `, ratio ${r.ratio}` : ""}${r.target ? ` (target ${r.target})` : ""}${met}`);
      }
      if (profDir) {
        if (!existsSync(profDir)) console.log(`   (no server profile: ${s.name} runs in the harness process; profile it with node --cpu-prof --cpu-prof-dir=<dir> --import tsx bench/run.ts ${s.name})`);
        for (const f of existsSync(profDir) ? profilesIn(profDir) : []) {
          const summary = summarizeProfile(f);
          writeFileSync(`${f}.txt`, summary + "\n");
          console.log(`\n${summary}\n   (profile: ${f})`);
        }
        continue; // profiled figures are skewed: not recorded
      }
      const file = writeResult({ scenario: s.name, title: s.title, reproduce, machine: startMachine, loadavgEnd: machine().loadavg, wallSeconds: Math.round((performance.now() - started) / 100) / 10, ...report });
      console.log(`   raw: ${path.relative(process.cwd(), file)}`);
    } catch (err) {
      failed.push(s.name);
      console.error(`   FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    }
  }
  if (!o.profile) {
    writeBenchmarks(SCENARIOS, PENDING);
    console.log(`\nBENCHMARKS.md written (${Math.round((performance.now() - t0) / 1000)} s)`);
  }
  if (failed.length) {
    console.error(`failed: ${failed.join(", ")}`);
    process.exitCode = 1;
  }
}

const cleanup = async () => {
  killAllServers();
  await dropAllBenchDatabases();
};
process.on("SIGINT", () => {
  // An event listener cannot be awaited: the process exits once cleanup settles, and a failed
  // cleanup (servers or databases left behind) is reported rather than lost in the exit.
  void cleanup()
    .catch((err: unknown) => console.error(`cleanup after SIGINT failed: ${err instanceof Error ? err.message : String(err)}`))
    .finally(() => process.exit(130));
});
main()
  .catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  })
  .finally(cleanup);
