// The files of deploy/: the Dockerfile's shape (its commands run in test/service/package.test.ts), the
// systemd unit (systemd-analyze verify), compose and Kubernetes agreeing with the service's shutdown
// settings, and nginx's site run in front of two real instances. No container engine runs here.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SETTINGS } from '../../src/config/settings.ts';
import { nginxSkip, PUBLIC_NAME, type RunningNginx, startNginx } from '../helpers/nginx.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';
import { send, subscribe } from '../helpers/upgrade-load.ts';
import { waitFor } from '../helpers/load.ts';

const DEPLOY = new URL('../../deploy/', import.meta.url).pathname;
const read = (file: string) => readFileSync(join(DEPLOY, file), 'utf8');
const DEFAULT_MS = {
  SHUTDOWN_DELAY_MS: Number(SETTINGS.shutdownDelayMs.default),
  SHUTDOWN_TIMEOUT_MS: Number(SETTINGS.shutdownTimeoutMs.default),
};

/** Every value `name` is given in `text` (YAML `NAME: 'v'`, `{ name: NAME, value: 'v' }`, or `NAME=v`). */
function valuesOf(text: string, name: string): number[] {
  const pattern = new RegExp(`${name}(?::\\s*|=|,\\s*value:\\s*)'?(\\d+)`, 'g');
  return [...text.matchAll(pattern)].map((match) => Number(match[1]));
}

/** The longest a stop may take as configured in `text`: SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS, defaults where unset. */
function stopBudgetMs(text: string): number {
  const most = (name: keyof typeof DEFAULT_MS) =>
    Math.max(...valuesOf(text, name), ...(valuesOf(text, name).length === 0 ? [DEFAULT_MS[name]] : []));
  return most('SHUTDOWN_DELAY_MS') + most('SHUTDOWN_TIMEOUT_MS');
}

describe('deploy/Dockerfile', () => {
  const text = read('Dockerfile');
  const stages = text.split(/^FROM /m).slice(1);
  const final = stages.at(-1) ?? '';
  const image = read('image.sh');
  for (const [name, check] of [
    [
      'is multi-stage: pack, install, then a slim runtime',
      () =>
        assert.deepEqual(
          stages.map((stage) => /\bAS (\w+)/.exec(stage.split('\n')[0] ?? '')?.[1]),
          ['pack', 'install', undefined],
        ),
    ],
    [
      'builds with deploy/image.sh, whose install is npm ci --omit=dev',
      () => {
        assert.match(stages[0] ?? '', /^RUN sh deploy\/image\.sh pack /m);
        assert.match(stages[1] ?? '', /^RUN sh \/pkg\/image\.sh install /m);
        assert.match(image, /npm ci --omit=dev/);
      },
    ],
    ['runs as a user that is not root', () => assert.match(final, /^USER (?!root\b|0\b)\w+/m)],
    [
      'keeps the database in a volume',
      () => {
        const volume = /^VOLUME (\S+)/m.exec(final)?.[1];
        assert.ok(volume !== undefined);
        assert.match(final, new RegExp(`DATABASE_URL=file:${volume}/`));
      },
    ],
    ['checks its health on /healthz', () => assert.match(final, /^HEALTHCHECK .*CMD .*\/healthz/m)],
    ['stops with SIGTERM', () => assert.match(final, /^STOPSIGNAL SIGTERM$/m)],
    [
      'exposes the port it serves',
      () => assert.equal(/^EXPOSE (\d+)/m.exec(final)?.[1], /\bPORT=(\d+)/.exec(final)?.[1]),
    ],
  ] as const) {
    it(name, check);
  }
});

describe('deploy/user-records.service', () => {
  const unit = read('user-records.service');
  const keys = new Map<string, string[]>();
  for (const line of unit.split('\n')) {
    const match = /^(\w+)=(.*)$/.exec(line);
    if (match !== null) keys.set(match[1] as string, [...(keys.get(match[1] as string) ?? []), match[2] as string]);
  }
  const systemd = existsSync('/usr/bin/systemd-analyze');

  it(
    `passes systemd-analyze verify${systemd ? '' : ' (SKIPPED: systemd-analyze is not installed; the keys are checked below)'}`,
    { skip: !systemd },
    () => {
      // It reports unknown keys and bad values on stderr, and fails on a unit it cannot load.
      const output = execFileSync('systemd-analyze', ['verify', join(DEPLOY, 'user-records.service')], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      assert.equal(output, '');
    },
  );

  for (const [key, value] of [
    ['DynamicUser', 'yes'],
    ['ProtectSystem', 'strict'],
    ['StateDirectory', 'user-records'],
    ['ProtectHome', 'yes'],
    ['PrivateTmp', 'yes'],
    ['PrivateDevices', 'yes'],
    ['NoNewPrivileges', 'yes'],
    ['CapabilityBoundingSet', ''],
    ['RestrictAddressFamilies', 'AF_INET AF_INET6 AF_UNIX'],
    ['KillSignal', 'SIGTERM'],
  ] as const) {
    it(`${key}=${value}`, () => assert.ok(keys.get(key)?.includes(value), `${key}: ${keys.get(key)?.join(', ')}`));
  }

  it('keeps the database in its state directory and gives a stop more time than the service takes', () => {
    assert.ok(keys.get('Environment')?.includes('DATABASE_URL=file:/var/lib/user-records/users.db'));
    assert.ok(Number(keys.get('TimeoutStopSec')?.[0]) * 1000 > stopBudgetMs(unit));
  });
});

describe('deploy/compose.yaml and deploy/kubernetes.yaml', () => {
  it('compose: PostgreSQL, two instances, nginx with its site; a stop waits longer than the service takes', () => {
    const compose = read('compose.yaml');
    for (const service of ['db', 'app1', 'app2', 'nginx']) assert.match(compose, new RegExp(`^  ${service}:`, 'm'));
    assert.match(compose, /image: postgres:/);
    assert.ok(existsSync(join(DEPLOY, 'nginx', 'user-records.conf')) && compose.includes('./nginx/user-records.conf:'));
    assert.ok(compose.includes('dockerfile: deploy/Dockerfile'));
    assert.ok(Number(/stop_grace_period: (\d+)s/.exec(compose)?.[1]) * 1000 > stopBudgetMs(compose));
  });

  it('kubernetes: liveness /healthz, readiness /readyz, Host a name it allows, a grace period longer than the stop', () => {
    const manifest = read('kubernetes.yaml');
    assert.match(manifest, /livenessProbe:\s+httpGet: \{ path: \/healthz/);
    assert.match(manifest, /readinessProbe:\s+httpGet: \{ path: \/readyz/);
    const allowed = /ALLOWED_HOSTS, value: '([^']+)'/.exec(manifest)?.[1]?.split(',') ?? [];
    for (const [, host] of manifest.matchAll(/name: Host, value: (\S+) \}/g))
      assert.ok(allowed.includes(host as string), `probe Host ${host}`);
    assert.ok((valuesOf(manifest, 'SHUTDOWN_DELAY_MS')[0] ?? 0) > 0, 'a delay for the endpoints to be updated');
    assert.ok(Number(/terminationGracePeriodSeconds: (\d+)/.exec(manifest)?.[1]) * 1000 > stopBudgetMs(manifest));
  });
});

describe('the event stream through a proxy', () => {
  it('tells proxies not to buffer it and caches not to keep it', async () => {
    const data = tempDir();
    const server = await startServer({ DATABASE_URL: join(data.dir, 'users.db') });
    try {
      const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const req = request(`${server.url}/users/events`, (res) => {
          resolve(res.headers);
          req.destroy();
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(headers['x-accel-buffering'], 'no');
      // no-store: neither a cache nor a browser keeps any of it (stricter than no-cache).
      assert.equal(headers['cache-control'], 'no-store');
    } finally {
      await server.stop();
      data.cleanup();
    }
  });

  it(
    `deploy/nginx/user-records.conf in front of three instances: events as they happen, and the others when one stops${nginxSkip ? ` (${nginxSkip})` : ''}`,
    { skip: nginxSkip, timeout: 120_000 },
    async () => {
      const data = tempDir();
      const env = { DATABASE_URL: join(data.dir, 'users.db'), ALLOWED_HOSTS: PUBLIC_NAME };
      const servers = [await startServer(env), await startServer(env), await startServer(env)];
      let proxy: RunningNginx | undefined;
      try {
        proxy = await startNginx(
          join(data.dir, 'nginx'),
          servers.map((server) => new URL(server.url).host),
        );
        const agent = proxy.agent();
        const get = (path: string, method = 'GET') =>
          send((proxy as RunningNginx).url, agent, method, path, { host: PUBLIC_NAME });

        // An event written through the proxy arrives through it on an open stream, while it stays open.
        const stream = subscribe(proxy.url, () => (proxy as RunningNginx).agent(), Date.now() + 60_000, {
          host: PUBLIC_NAME,
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal((await get('/users?name=Ann&age=30&city=Oslo', 'POST')).status, 200);
        assert.ok(
          await waitFor(() => stream.createdNames.includes('Ann'), 60_000),
          `the event did not come through (stream: ${stream.reconnects} reconnects, failures ${JSON.stringify(stream.failures)})`,
        );
        assert.equal(stream.reconnects, 0, 'the stream was ended');
        stream.stop();

        // One instance stops: every request still gets its answer, from the others.
        assert.equal(await (servers[0] as RunningServer).stop('SIGTERM'), 0);
        for (let i = 0; i < 6; i++) assert.equal((await get('/users')).status, 200);
        agent.destroy();
      } finally {
        await proxy?.stop();
        for (const server of servers) await server.stop('SIGKILL');
        data.cleanup();
      }
    },
  );
});
