import type { Config } from '../config.ts';
import { openPostgresStore } from './postgres-store.ts';
import { openSqliteStore } from './sqlite-store.ts';
import type { UserStore } from './store.ts';

/** The store DATABASE_URL names, its schema brought up to date. */
export async function openStore(
  config: Pick<Config, 'database' | 'databaseTimeoutMs' | 'databasePoolSize'>,
): Promise<UserStore> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return openSqliteStore(database.path, { busyTimeoutMs: config.databaseTimeoutMs });
    case 'postgres':
      return openPostgresStore(database.url, {
        poolSize: config.databasePoolSize,
        statementTimeoutMs: config.databaseTimeoutMs,
      });
  }
}
