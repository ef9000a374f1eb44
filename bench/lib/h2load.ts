/**
 * h2load (Debian's nghttp2-client) as a load generator for unary gRPC: one pre-encoded request
 * frame POSTed with the gRPC headers. It is written in C and gets 1.5–2× more requests through a
 * server than our Node generator (h2load-check), so pure-throughput rows use it: what it measures
 * is the server, not the generator. It counts HTTP 2xx as success and does not read grpc-status,
 * so a scenario checks once through a real client that the request succeeds.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { median } from "./scenario.js";

const run = promisify(execFile);

export interface H2loadRun {
  readonly command: string;
  readonly throughput: number;
  readonly succeeded: number;
  readonly failed: number;
  /** Mean request time over the run (h2load's "time for request" line), ms. */
  readonly meanMs: number;
  readonly output: string;
}

export interface H2loadSpec {
  /** "http://127.0.0.1:PORT" */
  readonly url: string;
  readonly path: string;
  /** A gRPC frame (5-byte prefix + message). */
  readonly body: Uint8Array;
  readonly connections?: number;
  /** Streams in flight per connection. */
  readonly streams?: number;
  /** Exactly this many requests (no warm-up) ... */
  readonly requests?: number;
  /** ... or a measured window after a warm-up. */
  readonly durationMs?: number;
  readonly warmupMs?: number;
}

export const H2LOAD_MISSING = "h2load is not installed (apt-get install -y nghttp2-client): not checked";

export async function h2loadInstalled(): Promise<boolean> {
  try {
    await run("h2load", ["--version"]);
    return true;
  } catch {
    return false;
  }
}

let dir: string | undefined;
let bodies = 0;

function bodyFile(body: Uint8Array): string {
  dir ??= mkdtempSync(path.join(os.tmpdir(), "berth-h2load-"));
  const file = path.join(dir, `body-${bodies++}.bin`);
  writeFileSync(file, body);
  return file;
}

function ms(duration: string, unit: string): number {
  const v = Number(duration);
  return unit === "us" ? v / 1000 : unit === "ms" ? v : unit === "s" ? v * 1000 : v;
}

export async function h2load(spec: H2loadSpec): Promise<H2loadRun> {
  const file = bodyFile(spec.body);
  const window =
    spec.requests !== undefined
      ? ["-n", String(spec.requests)]
      : ["-D", `${Math.max(1, Math.round((spec.durationMs ?? 4000) / 1000))}`, "--warm-up-time", `${Math.max(0, Math.round((spec.warmupMs ?? 1500) / 1000))}`];
  const args = [...window, "-c", String(spec.connections ?? 4), "-m", String(spec.streams ?? 16), "-H", "content-type: application/grpc", "-H", "te: trailers", "-d", file, `${spec.url}${spec.path}`];
  const command = `h2load ${args.map((a) => (a === file ? "BODY.bin" : /\s/.test(a) ? `'${a}'` : a)).join(" ")}`;
  const { stdout } = await run("h2load", args, { maxBuffer: 1 << 20 });
  const rate = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout);
  const reqs = /requests: .*?(\d+) succeeded, (\d+) failed/.exec(stdout);
  const time = /time for request:\s+[\d.]+(us|ms|s)\s+[\d.]+(?:us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(stdout);
  if (!rate || !reqs) throw new Error(`cannot parse h2load output:\n${stdout}`);
  return {
    command,
    throughput: Math.round(Number(rate[1])),
    succeeded: Number(reqs[1]),
    failed: Number(reqs[2]),
    meanMs: time ? Math.round(ms(time[2]!, time[3]!) * 1000) / 1000 : Number.NaN,
    output: stdout
      .split("\n")
      .filter((l) => /finished|requests:|time for request/.test(l))
      .join("\n"),
  };
}

/** "h2load 12345 req/s (n succeeded, m failed)" */
export function describeH2load(r: H2loadRun): string {
  return `${r.throughput} req/s (${r.succeeded} succeeded, ${r.failed} failed, mean ${r.meanMs} ms)`;
}

/** Alternating h2load rounds (A B, B A, ...), median of the per-round ratios. */
export async function alternate(
  ctx: { rounds: number; log(m: string): void },
  loads: Record<string, () => Promise<H2loadRun>>,
): Promise<{ runs: Record<string, H2loadRun[]>; throughput: Record<string, number>; ratio(a: string, b: string): number }> {
  const labels = Object.keys(loads);
  const runs: Record<string, H2loadRun[]> = Object.fromEntries(labels.map((l) => [l, []]));
  for (let r = 0; r < ctx.rounds; r++) {
    for (const label of r % 2 === 0 ? labels : [...labels].reverse()) {
      const run = await loads[label]!();
      if (run.failed > 0) throw new Error(`h2load ${label}: ${run.failed} requests failed\n${run.output}`);
      runs[label]!.push(run);
      ctx.log(`${label.padEnd(10)} h2load ${describeH2load(run)}`);
    }
  }
  return {
    runs,
    throughput: Object.fromEntries(labels.map((l) => [l, median(runs[l]!.map((x) => x.throughput))])),
    ratio: (a, b) => median(runs[a]!.map((x, i) => x.throughput / runs[b]![i]!.throughput)),
  };
}

