import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config/load.ts';
import { startTracing } from '../src/ops/tracing.ts';
import { openDatabase } from '../src/store/database.ts';
import type { User, UserStore } from '../src/store/store.ts';
import { LAYERS } from './layers.ts';

// The service with some of its layers left out, for the bench's price list: LAYERS (1 to 8) says
// how many of the layers in bench/layers.ts are on, in order; the other settings come from the
// environment as for the service. Every request then costs what the layers up to it cost.

const on = Number(process.env.LAYERS ?? LAYERS.length);

/** A store that answers from memory (every read with one record): the route's work without a database. */
function memoryStore(): UserStore {
  const user: User = {
    id: 1,
    name: 'Alice',
    age: 30,
    city: 'Paris',
    createdAt: new Date(0),
    updatedAt: new Date(0),
    version: 1,
  };
  const unused = async (): Promise<never> => {
    throw new Error('the price list reads one record only');
  };
  return {
    get: async () => user,
    list: async () => [user],
    version: async () => 1,
    position: async () => ({ version: 1, history: '' }),
    count: async () => 1,
    stats: unused,
    ping: async () => undefined,
    onCommit: () => undefined,
    close: async () => undefined,
    // A create answered from memory: the route's work on a write without a database (bench/.. profiles).
    create: async (input) => ({ ...user, ...input }),
    createOnce: unused,
    createMany: unused,
    update: unused,
    remove: unused,
    changes: unused,
    watch: () => () => undefined,
    claimHook: unused,
    advanceHook: unused,
    releaseHook: unused,
  };
}

/**
 * An OTLP/HTTP receiver that reads each export and drops it, in a process of its own, so that its
 * work is not counted as the service's; it ends with this one (its stdin closes). Answers its URL.
 */
async function discardingReceiver(): Promise<string> {
  const source = `require('node:http').createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });
    process.stdin.on('end', () => process.exit(0)).resume();`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
  const [port] = (await once(child.stdout, 'data')) as [Buffer];
  return `http://127.0.0.1:${port.toString().trim()}`;
}

const env = { ...process.env };
if (on < 4) env.LOG_LEVEL = 'silent';
if (on < 5) Object.assign(env, { RATE_LIMIT: 'off', OVERLOAD_LAG_MS: '0', ALLOWED_HOSTS: '*' });
if (on < 6) delete env.API_TOKENS;
const config = loadConfig(env, []);
const opened = on < 7 ? memoryStore() : await openDatabase(config).openStore();
// The SDK reads its settings from process.env, as in the service.
if (on >= 8) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = await discardingReceiver();
const tracing = on < 8 ? undefined : await startTracing(process.env);
const store = tracing === undefined ? opened : tracing.store(opened, 'sqlite');
const app = await buildApp(config, {
  store,
  tracing,
  without: { ...(on < 2 ? { securityHeaders: true } : {}), ...(on < 3 ? { metrics: true } : {}) },
});
await app.listen({ port: config.port, host: config.host });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void app.close().finally(() => process.exit(0)));
}
