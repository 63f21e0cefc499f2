import type { Metric } from 'prom-client';

/**
 * Counters and histograms for the request path, cheap to count: each label set gets its own slot
 * once, and counting is an addition (prom-client's own metrics look the labels up and hash them on
 * every observation, a measurable share of a fast request). prom-client reads them at scrape time
 * through `get()`, in its own format, so /metrics, the registries and the cluster aggregation
 * treat them as any other metric.
 */

type Labels = Record<string, string>;

/** A metric as prom-client's registry reads it (`get()`): its own JSON format. */
interface Sample {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}
interface MetricJson {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

abstract class Labelled<Slot> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum' as const;
  readonly #labelNames: readonly string[];
  protected readonly slots = new Map<string, { labels: Labels; slot: Slot }>();

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.#labelNames = labelNames;
  }

  protected abstract create(): Slot;

  /** The slot of one label set (values in the order of the label names); keep it to count cheaply. */
  protected slotFor(values: readonly string[]): Slot {
    const key = values.join('\u0000');
    let entry = this.slots.get(key);
    if (entry === undefined) {
      const labels: Labels = {};
      this.#labelNames.forEach((label, i) => (labels[label] = values[i] as string));
      entry = { labels, slot: this.create() };
      this.slots.set(key, entry);
    }
    return entry.slot;
  }
}

export class FastCounter extends Labelled<{ value: number }> {
  readonly type = 'counter' as const;

  protected create() {
    return { value: 0 };
  }

  /** A counter for one label set: `inc()` adds one. */
  child(...values: string[]): { inc(): void } {
    const slot = this.slotFor(values);
    return { inc: () => void (slot.value += 1) };
  }

  async get(): Promise<MetricJson> {
    const values = [...this.slots.values()].map(({ labels, slot }) => ({ labels, value: slot.value }));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

export class FastHistogram extends Labelled<{ buckets: Float64Array; sum: number; count: number }> {
  readonly type = 'histogram' as const;
  readonly #bounds: readonly number[];

  constructor(name: string, help: string, labelNames: readonly string[], bounds: readonly number[]) {
    super(name, help, labelNames);
    this.#bounds = bounds;
  }

  protected create() {
    return { buckets: new Float64Array(this.#bounds.length), sum: 0, count: 0 };
  }

  /** A histogram for one label set: `observe(value)` counts a value (seconds). */
  child(...values: string[]): { observe(value: number): void } {
    const slot = this.slotFor(values);
    const bounds = this.#bounds;
    return {
      observe: (value: number) => {
        slot.sum += value;
        slot.count += 1;
        for (let i = 0; i < bounds.length; i++) {
          if (value <= (bounds[i] as number)) {
            slot.buckets[i] = (slot.buckets[i] as number) + 1;
            break;
          }
        }
      },
    };
  }

  async get(): Promise<MetricJson> {
    const values: Sample[] = [];
    for (const { labels, slot } of this.slots.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += slot.buckets[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: bound }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: slot.count });
      values.push({ metricName: `${this.name}_sum`, labels, value: slot.sum });
      values.push({ metricName: `${this.name}_count`, labels, value: slot.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** One of these as prom-client's registries take it. */
export function asPromMetric(metric: FastCounter | FastHistogram): Metric {
  return metric as unknown as Metric;
}
