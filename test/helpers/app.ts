import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { openSqliteStore } from '../../src/store/sqlite-store.ts';

/** The real app on a throwaway in-memory database, for app.inject tests. */
export async function buildTestApp(): Promise<FastifyInstance> {
  const store = openSqliteStore(':memory:');
  const app = await buildApp({ logLevel: 'silent', requestTimeoutMs: 30_000 }, { store });
  app.addHook('onClose', async () => store.close());
  return app;
}
