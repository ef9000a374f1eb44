/**
 * RPC latency by method and code, exposed as one Prometheus histogram.
 *
 * prom-client's Histogram hashes the label set on every observe(); this one keeps, per method,
 * an array indexed by the numeric gRPC code of plain bucket arrays, so an RPC's completion costs
 * a Map lookup, an array index and a short linear bucket search. The registry reads it through
 * get() at scrape time, in prom-client's metric shape.
 */
import type { ScrapedMetric, ScrapedValue } from "./collected.js";

export const RPC_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

interface Series {
  readonly code: string;
  /** counts[i]: observations in (bucket i-1, bucket i]; cumulated at scrape. */
  readonly counts: Float64Array;
  count: number;
  sum: number;
}

export class RpcHistogram {
  readonly name: string;
  readonly help = "RPC latency from arrival to completion (streams: their whole life), by method and status code; _count is the number of RPCs";
  readonly type = "histogram" as const;
  readonly aggregator = "sum" as const;
  private readonly byMethod = new Map<string, (Series | undefined)[]>();

  constructor(name = "berth_rpc_duration_seconds") {
    this.name = name;
  }

  observe(method: string, code: number, codeName: string, seconds: number): void {
    let codes = this.byMethod.get(method);
    if (codes === undefined) this.byMethod.set(method, (codes = []));
    let s = codes[code];
    if (s === undefined) codes[code] = s = { code: codeName, counts: new Float64Array(RPC_BUCKETS.length), count: 0, sum: 0 };
    let i = 0;
    while (i < RPC_BUCKETS.length && seconds > RPC_BUCKETS[i]!) i++;
    if (i < RPC_BUCKETS.length) s.counts[i]!++;
    s.count++;
    s.sum += seconds;
  }

  /** The number of RPCs of `method` that ended with `codeName` (tests). */
  count(method: string, codeName: string): number {
    return (this.byMethod.get(method) ?? []).find((s) => s?.code === codeName)?.count ?? 0;
  }

  get(): Promise<ScrapedMetric> {
    const values: ScrapedValue[] = [];
    const name = this.name;
    for (const [method, codes] of this.byMethod) {
      for (const s of codes) {
        if (s === undefined) continue;
        let acc = 0;
        for (let i = 0; i < RPC_BUCKETS.length; i++) {
          acc += s.counts[i]!;
          values.push({ metricName: `${name}_bucket`, labels: { method, code: s.code, le: RPC_BUCKETS[i]! }, value: acc });
        }
        values.push({ metricName: `${name}_bucket`, labels: { method, code: s.code, le: "+Inf" }, value: s.count });
        values.push({ metricName: `${name}_sum`, labels: { method, code: s.code }, value: s.sum });
        values.push({ metricName: `${name}_count`, labels: { method, code: s.code }, value: s.count });
      }
    }
    return Promise.resolve({ name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  reset(): void {
    this.byMethod.clear();
  }
}
