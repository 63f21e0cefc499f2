import cluster from 'node:cluster';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { REPLACE_MESSAGE, runPrimary } from './cluster.ts';
import { helpText } from './config/help.ts';
import { webhookTargets } from './changes/webhook-filter.ts';
import { flagRefusal, settingFlags } from './config/flags.ts';
import { type Config, ConfigError, loadConfig } from './config/load.ts';
import { VERSION } from './config/version.ts';
import { exposureWarning } from './ops/exposure.ts';
import { handOver } from './ops/hand-over.ts';
import type { Lifecycle } from './ops/health.ts';
import { startUrls } from './ops/start-urls.ts';
import { startTracing, tracingWanted } from './ops/tracing.ts';
import { type Database, openDatabase } from './store/database.ts';
import { StoreOpenError, StoreUnavailableError } from './store/store.ts';

/**
 * Connections the kernel may hold for the server to accept. Node's default, 511, overflows under a
 * flood of new connections (thousands of slow or idle clients being replaced as the timeouts close
 * them): the kernel then drops handshakes, and those clients wait seconds for retransmits before the
 * server even sees them. The kernel caps this at net.core.somaxconn (4096 on current Linux).
 */
const LISTEN_BACKLOG = 4096;

/** Past the keep-alive timeout, the wait for connections to close as a stop hands them over. */
const HAND_OVER_MARGIN_MS = 1000;

/** Opens storage and listens; on SIGTERM/SIGINT finishes in-flight requests and closes. */
async function serve(config: Readonly<Config>, database: Database, env: NodeJS.ProcessEnv): Promise<void> {
  // The standard OTEL_* variables, read by the OpenTelemetry SDK itself, which is loaded only then.
  const tracing = tracingWanted(env) ? await startTracing(env) : undefined;
  const store = await database.openStore();
  const lifecycle: Lifecycle = { draining: false };
  let app: FastifyInstance;
  try {
    app = await buildApp(config, {
      store: tracing === undefined ? store : tracing.store(store, config.database.kind),
      lifecycle,
      tracing,
    });
    await app.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG });
    // With workers, the primary says it once all of them listen (cluster.ts).
    const address = app.server.address();
    if (cluster.isPrimary && typeof address === 'object' && address !== null) {
      const { msg, ...urls } = startUrls(address.address, address.port);
      app.log.info(urls, msg);
    }
    // Once per service, not once per worker.
    const warning = exposureWarning(config);
    if (warning !== undefined && (cluster.isPrimary || cluster.worker?.id === 1)) app.log.warn(warning);
  } catch (error) {
    await store.close();
    throw error;
  }

  let stopping = false;
  /** Ends the wait of SHUTDOWN_DELAY_MS early; set while it lasts. */
  let endDelay: (() => void) | undefined;
  const stop = async (signal: string) => {
    if (endDelay !== undefined) return endDelay();
    if (stopping) return;
    stopping = true;
    lifecycle.draining = true;
    // The balancer in front (a Kubernetes Service, a proxy's health check) learns from /readyz that
    // this instance is going, a few seconds later; meanwhile its requests are still served. SIGINT
    // (Ctrl-C) stops at once.
    if (signal === 'SIGTERM' && config.shutdownDelayMs > 0) {
      app.log.info(
        { signal, delayMs: config.shutdownDelayMs },
        'draining: /readyz answers 503, requests are still served',
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, config.shutdownDelayMs);
        endDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      endDelay = undefined;
    }
    app.log.info({ signal }, 'shutting down');
    const deadline = Date.now() + config.shutdownTimeoutMs;
    const timer = setTimeout(() => {
      app.log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    // At most half the shutdown timeout: the other half is for the requests still in flight.
    const handOverMs = Math.min(config.keepAliveTimeoutMs + HAND_OVER_MARGIN_MS, config.shutdownTimeoutMs / 2);
    if (signal !== 'SIGINT') await handOver(app, lifecycle, handOverMs, app.log);
    // Keep-alive connections that finish their last request after close() began stay open until
    // their timeout; sweep them as they go idle so the process can stop promptly.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    try {
      await app.close();
      clearInterval(sweep);
      await store.close();
      // The spans still queued, within half the time left: a collector that does not answer costs at
      // most that, never the exit code.
      await tracing?.flush(Math.max(0, (deadline - Date.now()) / 2));
      app.log.info('stopped');
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  if (cluster.isWorker) followPrimary(() => void stop(REPLACE_MESSAGE));
  // One process cannot hand over to itself; left to Node's default, SIGHUP (a `systemctl reload`, a
  // closed terminal) would end it at once, cutting every request in flight.
  else
    process.on('SIGHUP', () =>
      app.log.warn(
        'SIGHUP ignored: one process cannot replace itself without a gap; run WORKERS=2 or more for replacement on SIGHUP, or restart it (SIGTERM, then start)',
      ),
    );
}

/**
 * A worker is replaced (SIGHUP to the primary, cluster.ts) by a message rather than a signal: it
 * hands over at once, without SHUTDOWN_DELAY_MS, as the primary stops giving it connections the
 * moment it stops listening. SIGHUP itself is the primary's: a worker that gets it too (a closed
 * terminal signals the whole process group) keeps serving.
 */
function followPrimary(replace: () => void): void {
  process.on('message', (message) => {
    if (message === REPLACE_MESSAGE) replace();
  });
  process.on('SIGHUP', () => undefined);
}

/**
 * The service, as `npm start` and `user-records serve` run it: settings from the environment and
 * `argv`, then storage, listen and signals. Exits the process on a fault, with its reason in one line.
 */
export function runServer(argv: string[], usage: string, env: NodeJS.ProcessEnv = process.env): void {
  main(argv, usage, env).catch(exitWith);
}

async function main(argv: string[], usage: string, env: NodeJS.ProcessEnv): Promise<void> {
  if (argv.includes('--help')) return void process.stdout.write(helpText(usage));
  if (argv.includes('--version')) return void process.stdout.write(`${VERSION}\n`);
  // A flag it does not take is said in one sentence, as the other commands say it (cli.ts).
  try {
    parseArgs({ args: argv, options: settingFlags(), strict: true, allowPositionals: false });
  } catch (error) {
    throw new ConfigError(flagRefusal(error, usage));
  }
  const config = loadConfig(env, argv);
  // A webhook's filter is checked by the event stream's rules, before anything starts.
  webhookTargets(config.webhookUrls);
  // Before the database is opened (and perhaps created and migrated): a port in use stops the start
  // with nothing left behind.
  await checkPort(config);
  const database = openDatabase(config);
  if (config.workers > 1 && cluster.isPrimary) {
    // Migrations and start-up faults once, before any worker: workers then open a ready database.
    await (await database.openStore()).close();
    runPrimary(config);
    return;
  }
  await serve(config, database, env);
}

/** Fails with the reason when the port cannot be listened on (in use, not allowed); 0 picks a free one, always possible. */
async function checkPort(config: Pick<Config, 'port' | 'host'>): Promise<void> {
  if (config.port === 0 || !cluster.isPrimary) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE' ? 'is in use by another process' : `cannot be listened on: ${error.message}`;
      reject(new PortError(`port ${config.port} on ${config.host} (PORT, HOST) ${why}`));
    });
    probe.listen({ port: config.port, host: config.host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

class PortError extends Error {
  override name = 'PortError';
}

function exitWith(error: unknown): never {
  if (error instanceof ConfigError) {
    process.stderr.write(`user-records: ${error.message}\n`);
    process.exit(2);
  }
  // Faults of the environment (port in use, unknown host, unreadable database) carry a code and need
  // no stack trace; anything else is a bug and keeps it.
  const code = (error as { code?: unknown }).code;
  const text =
    error instanceof StoreUnavailableError || error instanceof StoreOpenError || error instanceof PortError
      ? error.message
      : typeof code === 'string'
        ? `${(error as Error).message} (${code})`
        : ((error as Error).stack ?? String(error));
  process.stderr.write(`user-records: cannot start: ${text}\n`);
  process.exit(1);
}
