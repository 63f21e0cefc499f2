import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

// With WORKERS > 1 a scrape reaches one worker, but must report the whole service. That worker asks
// the primary; the primary collects every listening worker's metrics over IPC, sums them with
// prom-client's aggregators and sends the text back. prom-client's own clusterMetrics() is not used:
// it waits 5 s for a worker that died and forgets a dead worker's counts, which would make the
// service's counters fall (Prometheus reads a fall as a reset and over-counts the rate).

/** The primary gives up on a worker that has not sent its metrics after this long. */
const COLLECT_TIMEOUT_MS = 2000;
/** A worker gives up on the primary after this long: longer, so the primary's reason arrives first. */
const SCRAPE_TIMEOUT_MS = 4000;

type Snapshot = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

type Message =
  /** Worker to primary: the whole service's metrics, please. */
  | { type: 'user-records:metrics-scrape'; id: number }
  /** Primary to the worker that asked: the text, or why there is none. */
  | { type: 'user-records:metrics-result'; id: number; text?: string; error?: string }
  /** Primary to every worker: your own metrics, please. */
  | { type: 'user-records:metrics-collect'; id: number }
  /** Worker to primary: its own metrics, or why there are none. */
  | { type: 'user-records:metrics-snapshot'; id: number; metrics?: Snapshot; error?: string };

function isMessage(value: unknown): value is Message {
  const type = (value as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type.startsWith('user-records:metrics-');
}

/** What keeps counting once its worker is gone: counters and histograms, not gauges of a dead process. */
function cumulative(snapshot: Snapshot): Snapshot {
  return snapshot.filter((metric) => ['counter', 'histogram'].includes(String(metric.type)));
}

/**
 * In the primary: answers workers' scrapes with the metrics of every listening worker, summed (each
 * metric by its prom-client aggregator). Call `retire` when a worker exits: its counts as of its last
 * scrape stay in the totals, so the service's counters never go down.
 */
export function aggregateWorkerMetrics(listening: ReadonlySet<Worker>): { retire(worker: Worker): void } {
  const latest = new Map<Worker, Snapshot>();
  let retired: Promise<Snapshot> = Promise.resolve([]);
  /** Collections under way: a worker's answer, or its exit, settles its part. */
  const collections = new Map<number, { answer(worker: Worker, message: Message): void; gone(worker: Worker): void }>();
  let nextId = 0;

  /** Resolves with the workers that answered once all have (their snapshots are in `latest`). */
  const collect = (): Promise<Set<Worker>> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const pending = new Set([...listening].filter((worker) => worker.isConnected()));
      const answered = new Set<Worker>();
      const finish = (error?: Error) => {
        clearTimeout(timer);
        collections.delete(id);
        if (error === undefined) resolve(answered);
        else reject(error);
      };
      const timer = setTimeout(
        () => finish(new Error(`${pending.size} worker(s) did not send their metrics within ${COLLECT_TIMEOUT_MS} ms`)),
        COLLECT_TIMEOUT_MS,
      );
      collections.set(id, {
        answer(worker, message) {
          if (message.type !== 'user-records:metrics-snapshot' || !pending.delete(worker)) return;
          if (message.metrics === undefined) return finish(new Error(message.error ?? 'a worker sent no metrics'));
          latest.set(worker, message.metrics);
          answered.add(worker);
          if (pending.size === 0) finish();
        },
        gone(worker) {
          if (pending.delete(worker) && pending.size === 0) finish();
        },
      });
      for (const worker of pending) {
        // A worker that exits before it answers is settled by retire().
        worker.send({ type: 'user-records:metrics-collect', id } satisfies Message, undefined, () => undefined);
      }
      if (pending.size === 0) finish();
    });

  const scrape = async (): Promise<string> => {
    const answered = await collect();
    // Wait until no worker retired meanwhile, then read its snapshot from one place only: either
    // still live in `latest` or already in `retired`, never both, never neither.
    let past: Snapshot;
    let chain: Promise<Snapshot>;
    do {
      chain = retired;
      past = await chain;
    } while (chain !== retired);
    const live = [...answered].map((worker) => latest.get(worker)).filter((metrics) => metrics !== undefined);
    return AggregatorRegistry.aggregate([past, ...live]).metrics();
  };

  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === 'user-records:metrics-snapshot') collections.get(message.id)?.answer(worker, message);
    if (message.type !== 'user-records:metrics-scrape') return;
    const reply = (answer: Message) => {
      if (worker.isConnected()) worker.send(answer, undefined, () => undefined);
    };
    scrape().then(
      (text) => reply({ type: 'user-records:metrics-result', id: message.id, text }),
      (error: Error) => reply({ type: 'user-records:metrics-result', id: message.id, error: error.message }),
    );
  });

  return {
    retire(worker) {
      for (const collection of collections.values()) collection.gone(worker);
      const last = latest.get(worker);
      latest.delete(worker);
      if (last === undefined) return;
      const kept = cumulative(last);
      retired = retired.then(async (sofar) => {
        try {
          return await AggregatorRegistry.aggregate([sofar, kept]).getMetricsAsJSON();
        } catch {
          return sofar; // cannot happen with prom-client's own aggregators; never break every later scrape
        }
      });
    },
  };
}

/** A worker's side of the aggregation. */
export interface WorkerMetrics {
  /** The whole service's metrics, in Prometheus text, from the primary. */
  scrape(): Promise<string>;
  /** Stops answering the primary (the app is closing). */
  leave(): void;
}

/** In a worker: answers the primary's collections with `registry`, and asks it for the service's total. */
export function joinWorkerMetrics(registry: Registry): WorkerMetrics {
  const waiting = new Map<number, (answer: { text?: string; error?: string }) => void>();
  let nextId = 0;
  const send = (message: Message) => process.send?.(message, undefined, undefined, () => undefined);

  const onMessage = (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === 'user-records:metrics-result') waiting.get(message.id)?.(message);
    if (message.type !== 'user-records:metrics-collect') return;
    const { id } = message;
    registry.getMetricsAsJSON().then(
      (metrics) => send({ type: 'user-records:metrics-snapshot', id, metrics }),
      (error: Error) => send({ type: 'user-records:metrics-snapshot', id, error: error.message }),
    );
  };
  process.on('message', onMessage);

  return {
    scrape: () =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the primary sent no metrics within ${SCRAPE_TIMEOUT_MS} ms`));
        }, SCRAPE_TIMEOUT_MS);
        waiting.set(id, (answer) => {
          clearTimeout(timer);
          waiting.delete(id);
          if (answer.text !== undefined) resolve(answer.text);
          else reject(new Error(answer.error ?? 'the primary sent no metrics'));
        });
        send({ type: 'user-records:metrics-scrape', id });
      }),
    leave: () => process.off('message', onMessage),
  };
}

/** True in a worker process of `WORKERS` > 1. */
export const inWorker = (): boolean => cluster.isWorker;
