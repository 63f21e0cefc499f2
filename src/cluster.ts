import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { type Logger, pino } from 'pino';
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
/** How long a replacement waits for a new worker to listen before it gives up on it. */
const START_TIMEOUT_MS = 60_000;
/** What the primary sends a worker it replaces (serve.ts). */
export const REPLACE_MESSAGE = 'user-records:replace';

/**
 * The primary process of `WORKERS` > 1: forks the workers, which share the port (each accepts
 * from it), replaces a worker that dies, and on SIGTERM/SIGINT stops them all,
 * each finishing its requests in flight, then exits 0 if every worker stopped cleanly. A scrape of
 * `/metrics` on any worker is answered with the sum over all of them, gathered here.
 */
export function runPrimary(config: Readonly<Config>): void {
  // The workers accept from the shared listening socket themselves. With Node's default on Linux
  // (the primary accepts and hands each connection to a worker in turn), a worker killed between
  // the hand-over and its acceptance leaves that connection open in the primary, unanswered and
  // never closed: the client waits forever. Accepting in the workers, a killed worker's connections
  // are reset by the kernel, and the client can retry. The kernel shares connections less evenly.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
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

  /** Workers being replaced (SIGHUP): their exit is the replacement's, not a death to make up for. */
  const retiring = new Set<Worker>();
  /** `retry`: a worker that fails to start is tried again; a replacement reports it instead. */
  const fork = (retry = true) => {
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
      if (retiring.delete(worker)) {
        if (code !== 0)
          log.error({ worker: worker.process.pid, code, signal }, 'a worker being replaced did not stop cleanly');
        return;
      }
      if (!started && !retry) return;
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
    return worker;
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
  replaceOnHangUp({
    log,
    listening,
    retiring,
    fork: () => fork(false),
    stopping: () => stopping,
    stopBudgetMs: config.shutdownTimeoutMs + 2000,
  });
  for (let i = 0; i < config.workers; i++) fork();
}

/** How many times a replacement starts a new worker before it gives up and leaves the old ones serving. */
const START_ATTEMPTS = 3;

interface Replacement {
  log: Logger;
  /** The workers serving now. */
  listening: ReadonlySet<Worker>;
  retiring: Set<Worker>;
  /** Starts a worker that is not tried again if it fails to start. */
  fork: () => Worker;
  stopping: () => boolean;
  /** How long a replaced worker may take to stop before it is killed. */
  stopBudgetMs: number;
}

/**
 * SIGHUP: every worker serving now is replaced, one at a time, by one running the code on disk now
 * (with the primary's settings): the new one starts and listens, and only then is the old one told
 * to hand over (ops/hand-over.ts: it stops listening, answers what is in flight with `Connection:
 * close`, ends its event streams with a comment to reconnect, waits for its connections to close)
 * and stop. A SIGHUP during a replacement is queued (one, however many come); a new worker that
 * fails to start START_ATTEMPTS times ends the replacement and the old ones keep serving.
 */
function replaceOnHangUp(options: Replacement): void {
  const { log } = options;
  let running = false;
  let queued = false;

  const replaceAll = async () => {
    const old = [...options.listening];
    log.info({ workers: old.length }, 'SIGHUP: replacing the workers one at a time');
    let replaced = 0;
    for (const worker of old) {
      if (options.stopping()) return log.info('replacement abandoned: the service is stopping');
      // Died meanwhile: the primary has already started another in its place.
      if (worker.isDead() || !options.listening.has(worker)) continue;
      // A start can fail for a passing reason (the database busy under load): tried again, as a
      // worker that dies is, before the replacement gives up.
      let fresh = options.fork();
      let outcome: 'listening' | 'exited' | 'late' = 'exited';
      for (let attempt = 1; ; attempt++) {
        log.info({ worker: fresh.process.pid, replaces: worker.process.pid, attempt }, 'starting a new worker');
        outcome = await started(fresh);
        if (outcome === 'late') fresh.process.kill('SIGKILL');
        if (outcome === 'listening' || attempt === START_ATTEMPTS || options.stopping()) break;
        log.warn(
          { worker: fresh.process.pid, outcome, code: fresh.process.exitCode, retryInMs: RESTART_DELAY_MS * attempt },
          'a new worker failed to start; trying again',
        );
        await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS * attempt));
        fresh = options.fork();
      }
      // A start cut short by a SIGTERM is not a failure to report as one.
      if (outcome !== 'listening' && options.stopping())
        return log.info('replacement abandoned: the service is stopping');
      if (outcome !== 'listening') {
        log.error(
          { worker: fresh.process.pid, outcome, replaced, left: old.length - replaced },
          'the new worker did not start; the old workers keep serving and the replacement stops here',
        );
        return;
      }
      if (worker.isDead()) continue;
      log.info({ worker: fresh.process.pid, old: worker.process.pid }, 'new worker listening; the old one hands over');
      options.retiring.add(worker);
      // A channel that closed meanwhile (the worker is dying) fails here rather than in an 'error' event.
      worker.send(REPLACE_MESSAGE, undefined, (error) => {
        if (error !== null) worker.process.kill('SIGTERM');
      });
      const stopTimer = setTimeout(() => {
        log.error({ worker: worker.process.pid }, 'the old worker did not stop in time; killing it');
        worker.process.kill('SIGKILL');
      }, options.stopBudgetMs);
      if (!worker.isDead()) await once(worker, 'exit');
      clearTimeout(stopTimer);
      replaced++;
      log.info({ worker: worker.process.pid, replaced, of: old.length }, 'old worker stopped');
    }
    log.info({ replaced }, `replacement done: ${replaced} workers replaced`);
  };

  const run = () => {
    running = true;
    replaceAll()
      .catch((error: unknown) => log.error({ err: error }, 'replacement failed'))
      .finally(() => {
        running = false;
        if (queued && !options.stopping()) {
          queued = false;
          log.info('starting the replacement asked for during the last one');
          run();
        }
      });
  };

  process.on('SIGHUP', () => {
    if (options.stopping()) return log.info('SIGHUP ignored: the service is stopping');
    if (!running) return run();
    if (queued) return log.info('SIGHUP ignored: a replacement is under way and another is already queued');
    queued = true;
    log.info('SIGHUP queued: a replacement is under way; another follows once it ends');
  });
}

/** How a new worker's start ended: it listens, it exited first, or neither in time (START_TIMEOUT_MS). */
function started(worker: Worker): Promise<'listening' | 'exited' | 'late'> {
  return new Promise((resolve) => {
    const done = (outcome: 'listening' | 'exited' | 'late') => {
      clearTimeout(timer);
      worker.off('listening', onListening).off('exit', onExit);
      resolve(outcome);
    };
    const onListening = () => done('listening');
    const onExit = () => done('exited');
    const timer = setTimeout(() => done('late'), START_TIMEOUT_MS);
    worker.once('listening', onListening).once('exit', onExit);
  });
}
