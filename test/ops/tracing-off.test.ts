import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startOtlpReceiver } from '../helpers/otlp-receiver.ts';
import { DEFAULT_ENTRY, SOURCE, startServer, tempDir } from '../helpers/server.ts';

// Traces off cost nothing: the service's code imports no module of OpenTelemetry, and none of its
// packages is in the process but the API facade prom-client requires for itself. Seen from outside
// the service, by loader hooks preloaded into its process (helpers/module-watch.mjs), from the
// sources or the bundle; the last row, traces on, shows the hooks see the packages when they are there.

const WATCH = new URL('../helpers/module-watch.mjs', import.meta.url).pathname;
const UNSET = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_SDK_DISABLED: '' };

const CASES: Array<{ name: string; env: (collector: string) => Record<string, string>; loads: boolean }> = [
  { name: 'no OTEL_ variable', env: () => UNSET, loads: false },
  {
    name: 'an endpoint, with OTEL_SDK_DISABLED=true',
    env: (collector) => ({ ...UNSET, OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_SDK_DISABLED: 'true' }),
    loads: false,
  },
  {
    name: 'an endpoint, with OTEL_TRACES_EXPORTER=none',
    env: (collector) => ({ ...UNSET, OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_TRACES_EXPORTER: 'none' }),
    loads: false,
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    env: (collector) => ({ ...UNSET, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector}/v1/traces` }),
    loads: true,
  },
];

describe('OpenTelemetry modules in the server process', () => {
  for (const { name, env, loads } of CASES) {
    it(`${name}: ${loads ? 'loaded' : 'none loaded'}, with requests, store calls and a webhook delivery`, async () => {
      const data = tempDir();
      const collector = await startOtlpReceiver();
      let delivered = 0;
      const hook = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          delivered++;
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
      const watchFile = join(data.dir, 'modules.txt');
      writeFileSync(watchFile, '');
      const server = await startServer(
        {
          ...env(collector.url),
          DATABASE_URL: join(data.dir, 'users.db'),
          WEBHOOK_URLS: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
          WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
          MODULE_WATCH_FILE: watchFile,
        },
        60_000,
        [],
        ['--import', WATCH, ...DEFAULT_ENTRY],
      );
      try {
        const created = await fetch(`${server.url}/users?name=Ada&age=36&city=London`, { method: 'POST' });
        assert.equal(created.status, 200);
        const location = String(created.headers.get('location'));
        assert.equal((await fetch(`${server.url}${location}`)).status, 200);
        assert.equal((await fetch(`${server.url}/users?city=London`)).status, 200);
        for (const end = Date.now() + 60_000; delivered === 0 && Date.now() < end;) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.ok(delivered > 0, 'the webhook was delivered');
        assert.equal(await server.stop('SIGTERM'), 0);
        const lines = readFileSync(watchFile, 'utf8').split('\n').filter(Boolean);
        const imports = lines.filter((line) => line.startsWith('import '));
        const packages = new Set(lines.map((line) => /@opentelemetry\/([^/]+)\//.exec(line)?.[1]));
        if (loads) {
          // From the sources, the service's modules import the packages; a bundle carries them in its files.
          if (DEFAULT_ENTRY === SOURCE) assert.ok(imports.length > 0, lines.join('\n'));
          for (const pkg of ['api', 'core', 'sdk-trace-base', 'context-async-hooks', 'exporter-trace-otlp-http']) {
            assert.ok(packages.has(pkg), `${pkg} loaded`);
          }
        } else {
          assert.deepEqual(imports, []);
          // prom-client (the metrics) requires @opentelemetry/api itself, for its exemplars: that
          // facade alone does nothing. No other package of OpenTelemetry may be there.
          assert.deepEqual(
            [...packages].filter((pkg) => pkg !== 'api'),
            [],
          );
        }
      } finally {
        await server.stop();
        await collector.close();
        await new Promise<void>((resolve) => hook.close(() => resolve()));
        data.cleanup();
      }
    });
  }
});
