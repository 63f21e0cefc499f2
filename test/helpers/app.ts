import type { FastifyInstance } from 'fastify';
import { after, before } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { UserStore } from '../../src/store/store.ts';

export interface InProcessApp {
  app: FastifyInstance;
  store: UserStore;
  /** http://127.0.0.1:<port>, for requests that need a real socket. */
  url: string;
  close(): Promise<void>;
}

/**
 * The whole service built in this process, as the server builds it (buildApp with the settings the
 * environment variables name), on a fresh in-memory database, listening on 127.0.0.1. For suites
 * that check HTTP semantics: `app.inject` for most requests, `url` where bytes on a socket matter.
 */
export async function startApp(env: Record<string, string> = {}): Promise<InProcessApp> {
  const config = loadConfig({ LOG_LEVEL: 'silent', ...env }, []);
  const store = await openSqliteStore(':memory:');
  const app = await buildApp(config, { store });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    app,
    store,
    url,
    close: async () => {
      await app.close();
      await store.close();
    },
  };
}

/** An in-process app started before the enclosing suite's tests and closed after. */
export function appForSuite(env: Record<string, string> = {}): { readonly current: InProcessApp } {
  let started: InProcessApp | undefined;
  before(async () => {
    started = await startApp(env);
  });
  after(async () => started?.close());
  return {
    get current() {
      if (started === undefined) throw new Error('the suite app has not started');
      return started;
    },
  };
}
