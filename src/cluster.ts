import cluster, { type Worker } from 'node:cluster';
import { pino } from 'pino';
import type { Config } from './config/load.ts';
import { aggregateWorkerMetrics } from './ops/cluster-metrics.ts';
import { logOutput } from './logs/output.ts';
import { startUrls } from './ops/start-urls.ts';

/** The wait before a worker that died is replaced. */
const RESTART_DELAY_MS = 1000;
/**
 * A worker that fails to start (its database is still recovering, say) is tried again, waiting
 * twice as long each time up to this: the service never ends because a start failed. The primary
 * has opened the database itself before the first fork, so a wrong setting is reported at once.
 */
const MAX_RETRY_DELAY_MS = 30_000;

/**
 * The primary process of `WORKERS` > 1: forks the workers, which share the port (the primary hands
 * out connections in turn), replaces a worker that dies, and on SIGTERM/SIGINT stops them all,
 * each finishing its requests in flight, then exits 0 if every worker stopped cleanly. A scrape of
 * `/metrics` on any worker is answered with the sum over all of them, gathered here.
 */
export function runPrimary(config: Readonly<Config>): void {
  // The same whole-line writer as the workers', so the primary's lines never cut into theirs.
  const log = pino(
    { level: config.logLevel, base: { pid: process.pid, role: 'primary' } },
    logOutput(config.logLevel, config.logBufferMb),
  );
  const listening = new Set<Worker>();
  let retryDelayMs = RESTART_DELAY_MS;
  let stopping = false;
  let failed = false;
  const metrics = aggregateWorkerMetrics(listening);

  const fork = () => {
    const worker = cluster.fork();
    worker.once('listening', (address) => {
      listening.add(worker);
      retryDelayMs = RESTART_DELAY_MS;
      if (listening.size === config.workers) {
        const host = address.address?.includes(':') ? `[${address.address}]` : address.address;
        log.info(
          { workers: config.workers },
          `all ${config.workers} workers listening at http://${host}:${address.port}`,
        );
        const { msg, ...urls } = startUrls(address.address ?? config.host, address.port);
        log.info(urls, msg);
      }
    });
    worker.once('exit', (code, signal) => {
      const started = listening.delete(worker);
      metrics.retire(worker);
      if (stopping) {
        if (code !== 0) failed = true;
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
        return;
      }
      let delayMs = RESTART_DELAY_MS;
      if (started) log.error({ worker: worker.process.pid, code, signal }, 'a worker died; starting another');
      else {
        delayMs = retryDelayMs;
        retryDelayMs = Math.min(retryDelayMs * 2, MAX_RETRY_DELAY_MS);
        log.error(
          { worker: worker.process.pid, code, signal, retryInMs: delayMs },
          `a worker failed to start; retrying in ${delayMs} ms`,
        );
      }
      setTimeout(() => {
        if (!stopping) fork();
      }, delayMs);
    });
  };

  const running = () => Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
  /** Each worker gets the signal the primary got: SIGTERM waits SHUTDOWN_DELAY_MS first, SIGINT does not. */
  const stop = (signal: NodeJS.Signals) => {
    // Again during the workers' SHUTDOWN_DELAY_MS: passed on, it ends their wait.
    if (stopping) return void running().forEach((worker) => worker.process.kill(signal));
    stopping = true;
    log.info({ reason: signal }, 'stopping the workers');
    if (running().length === 0) process.exit(0);
    for (const worker of running()) worker.process.kill(signal);
    // Each worker has its own shutdown timeout; this one only catches a worker that hangs anyway.
    const delayMs = signal === 'SIGTERM' ? config.shutdownDelayMs : 0;
    setTimeout(
      () => {
        log.error('workers did not stop in time; killing them');
        for (const worker of running()) worker.process.kill('SIGKILL');
        process.exit(1);
      },
      delayMs + config.shutdownTimeoutMs + 2000,
    ).unref();
  };

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  for (let i = 0; i < config.workers; i++) fork();
}
