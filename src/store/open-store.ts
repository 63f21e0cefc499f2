import type { Config } from '../config/load.ts';
import { openPostgresStore } from './postgres/store.ts';
import { openSqliteStore } from './sqlite/store.ts';
import type { UserStore } from './store.ts';

/** The store DATABASE_URL names, its schema brought up to date; `check` also checks an SQLite file whole. */
export async function openStore(
  config: Pick<Config, 'database' | 'databaseTimeoutMs' | 'databasePoolSize'> &
    Partial<Pick<Config, 'changesRetentionMs' | 'sqliteReaders' | 'sqliteReadQueue'>>,
  options: { check?: boolean } = {},
): Promise<UserStore> {
  const { database } = config;
  switch (database.kind) {
    case 'sqlite':
      return openSqliteStore(database.path, {
        busyTimeoutMs: config.databaseTimeoutMs,
        check: options.check,
        changesRetentionMs: config.changesRetentionMs,
        readers: config.sqliteReaders,
        readQueue: config.sqliteReadQueue,
      });
    case 'postgresql':
      return openPostgresStore(database.url, {
        poolSize: config.databasePoolSize,
        statementTimeoutMs: config.databaseTimeoutMs,
        changesRetentionMs: config.changesRetentionMs,
      });
  }
}
