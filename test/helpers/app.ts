import type { FastifyInstance } from 'fastify';
import { after, before } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/load.ts';
import { openDatabase } from '../../src/store/database.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import type { UserStore } from '../../src/store/store.ts';
import type { Backend, Database } from './backends.ts';

export interface InProcessApp {
  app: FastifyInstance;
  store: UserStore;
  /** http://127.0.0.1:<port>, for requests that need a real socket. */
  url: string;
  close(): Promise<void>;
}

/** The settings an in-process app gets: the environment variables the server would read. */
export type AppEnv = Record<string, string> | (() => Record<string, string>);

/**
 * Settings every in-process app starts with unless the test names its own. The app measures the
 * event loop of the test process, which also runs the clients: on a busy machine it runs late
 * often enough to shed requests with 503 (OVERLOAD_LAG_MS), which only the tests of shedding want.
 */
const TEST_DEFAULTS: Readonly<Record<string, string>> = {
  LOG_LEVEL: 'silent',
  OVERLOAD_LAG_MS: '60000',
  // As for server processes (helpers/server.ts): a busy machine's disk, not a fault of the service.
  DATABASE_TIMEOUT_MS: '30000',
};

/**
 * The whole service built in this process, as the server builds it (buildApp with the settings the
 * environment variables name), listening on 127.0.0.1. Without a backend it runs on the database
 * `env` names in DATABASE_URL, else on a fresh in-memory SQLite database; with one, on a fresh database of that backend opened as the server opens it
 * (openStore: an SQLite file, or a PostgreSQL schema of its own), dropped again by `close`. For suites
 * that check HTTP semantics: `app.inject` for most requests, `url` where bytes on a socket matter.
 */
export async function startApp(env: AppEnv = {}, backend?: Backend): Promise<InProcessApp> {
  const database: Database | undefined = await backend?.fresh();
  const settings = { ...TEST_DEFAULTS, ...(typeof env === 'function' ? env() : env) };
  if (database !== undefined) settings.DATABASE_URL = database.url;
  const config = loadConfig(settings, []);
  let store: UserStore;
  try {
    store =
      settings.DATABASE_URL === undefined ? await openSqliteStore(':memory:') : await openDatabase(config).openStore();
  } catch (error) {
    await database?.drop();
    throw error;
  }
  let app: FastifyInstance;
  let url: string;
  try {
    app = await buildApp(config, { store });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  } catch (error) {
    await store.close();
    await database?.drop();
    throw error;
  }
  return {
    app,
    store,
    url,
    close: async () => {
      try {
        await app.close();
        await store.close();
      } finally {
        await database?.drop();
      }
    },
  };
}

/**
 * An in-process app started before the enclosing suite's tests and closed after; on a fresh
 * database of `backend` when one is given (see startApp).
 */
export function appForSuite(env: AppEnv = {}, backend?: Backend): { readonly current: InProcessApp } {
  let started: InProcessApp | undefined;
  before(async () => {
    started = await startApp(env, backend);
  });
  after(async () => started?.close());
  return {
    get current() {
      if (started === undefined) throw new Error('the suite app has not started');
      return started;
    },
  };
}
