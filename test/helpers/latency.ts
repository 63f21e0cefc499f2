/** Latencies in buckets of 0.1 ms up to 60 s: constant memory however long a run is. */
export class Latencies {
  readonly #buckets = new Uint32Array(600_001);
  #count = 0;
  #max = 0;

  record(ms: number): void {
    const bucket = Math.min(Math.round(ms * 10), this.#buckets.length - 1);
    this.#buckets[bucket] = (this.#buckets[bucket] as number) + 1;
    this.#count++;
    if (ms > this.#max) this.#max = ms;
  }

  /** Times a call and records it (also when it throws). */
  async time<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.record(performance.now() - started);
    }
  }

  get count(): number {
    return this.#count;
  }

  get max(): number {
    return this.#max;
  }

  /** The latency (ms) that `p` percent of the samples do not exceed; 0 without samples. */
  percentile(p: number): number {
    const rank = Math.ceil((p / 100) * this.#count);
    let seen = 0;
    for (let i = 0; i < this.#buckets.length; i++) {
      seen += this.#buckets[i] as number;
      if (seen >= rank && seen > 0) return i / 10;
    }
    return 0;
  }

  /** `p50 1.2 ms, p99 8.4 ms, max 31.0 ms`. */
  summary(): string {
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    return `p50 ${ms(this.percentile(50))}, p99 ${ms(this.percentile(99))}, max ${ms(this.max)}`;
  }
}
