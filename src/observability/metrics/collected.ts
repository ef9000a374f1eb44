/**
 * Metrics whose values are read at scrape time from counters and stats the domain already keeps
 * (pool stats, hub subscriber count, …): nothing is incremented on the request path for them.
 * The object has the shape prom-client's Registry reads (name, help, type, get(), aggregator).
 */
import type { Metric, Registry } from "prom-client";

export type Labels = Readonly<Record<string, string | number>>;

export interface ScrapedValue {
  readonly value: number;
  readonly labels: Labels;
  readonly metricName?: string;
}

export interface ScrapedMetric {
  readonly name: string;
  readonly help: string;
  readonly type: "counter" | "gauge" | "histogram";
  readonly aggregator: "sum" | "max" | "omit";
  readonly values: ScrapedValue[];
}

/** One sample: [labels, value]. */
export type Sample = readonly [Labels, number];

export class CollectedMetric {
  readonly aggregator = "sum" as const;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge",
    /** Returns the samples now; return [] when the source is absent (the metric then has no series). */
    private readonly read: () => Iterable<Sample>,
  ) {}

  get(): Promise<ScrapedMetric> {
    const values: ScrapedValue[] = [];
    for (const [labels, value] of this.read()) values.push({ labels, value });
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  reset(): void {}
}

/** Registers a metric object of our own (CollectedMetric, RpcHistogram) with prom-client. */
export function registerCustom(registry: Registry, metric: { readonly name: string; get(): Promise<ScrapedMetric> }): void {
  registry.registerMetric(metric as unknown as Metric);
}
