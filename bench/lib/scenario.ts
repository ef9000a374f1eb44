/** What a scenario is (one small file in bench/scenarios/) and what it reports. */
import os from "node:os";
import type { LoadResult } from "../loadgen/index.js";

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly node: string;
  readonly date: string;
  /** 1-minute load average when the scenario started: how busy the shared machine was. */
  readonly loadavg: number;
}

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    node: process.version,
    date: new Date().toISOString(),
    loadavg: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}

/** One line of the BENCHMARKS.md table. */
export interface Row {
  /** What is measured, e.g. "Health/Check on Berth, throughput". */
  readonly figure: string;
  readonly value: number;
  readonly unit: string;
  readonly baseline?: { readonly name: string; readonly value: number; readonly unit: string };
  readonly ratio?: number;
  /** Human target, e.g. "ratio ≥ 0.8"; absent for report-only rows. */
  readonly target?: string;
  /** undefined: nothing to meet (report only). */
  readonly met?: boolean;
  readonly note?: string;
}

export interface ScenarioReport {
  readonly rows: readonly Row[];
  /** Commands of the servers and tools involved (reproduction). */
  readonly commands: readonly string[];
  /** Every load run, by label, in the order run. */
  readonly runs: Readonly<Record<string, readonly LoadResult[]>>;
  /** Anything else worth keeping in the JSON (RSS samples, h2load output, ...). */
  readonly extra?: Readonly<Record<string, unknown>>;
}

export interface ScenarioResult extends ScenarioReport {
  readonly scenario: string;
  readonly title: string;
  /** The command that reproduces this scenario. */
  readonly reproduce: string;
  readonly machine: Machine;
  /** 1-minute load average when the scenario ended. */
  readonly loadavgEnd?: number;
  readonly wallSeconds: number;
}

export interface Context {
  log(message: string): void;
  /** Set with --profile: start Berth with --cpu-prof writing here. */
  readonly cpuProfDir: string | undefined;
  /** Side-by-side rounds (alternating A, B, A, B, ...). */
  readonly rounds: number;
  readonly warmupMs: number;
  readonly durationMs: number;
}

export interface Scenario {
  readonly name: string;
  readonly title: string;
  run(ctx: Context): Promise<ScenarioReport>;
}

/** A scenario waiting for the feature it measures; listed in BENCHMARKS.md as not yet measured. */
export interface PendingScenario {
  readonly name: string;
  readonly title: string;
  readonly figure: string;
  readonly target: string;
  readonly waitsFor: string;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export interface SideBySide {
  readonly runs: Record<string, LoadResult[]>;
  /** Median throughput per label. */
  readonly throughput: Record<string, number>;
  /** Median over rounds of (a / b) measured in the same round. */
  ratio(a: string, b: string): number;
}

/**
 * Runs the loads alternately, `rounds` times (A B A B ...; the order flips each round so
 * neither side always follows the other), so both sides see the same machine.
 */
export async function sideBySide(ctx: Context, loads: Record<string, () => Promise<LoadResult>>, describe: (label: string, r: LoadResult) => void): Promise<SideBySide> {
  const labels = Object.keys(loads);
  const runs: Record<string, LoadResult[]> = Object.fromEntries(labels.map((l) => [l, []]));
  for (let round = 0; round < ctx.rounds; round++) {
    const order = round % 2 === 0 ? labels : [...labels].reverse();
    for (const label of order) {
      const r = await loads[label]!();
      runs[label]!.push(r);
      describe(label, r);
    }
  }
  const throughput = Object.fromEntries(labels.map((l) => [l, median(runs[l]!.map((r) => r.throughput))]));
  return {
    runs,
    throughput,
    ratio(a, b) {
      return median(runs[a]!.map((r, i) => r.throughput / runs[b]![i]!.throughput));
    },
  };
}
