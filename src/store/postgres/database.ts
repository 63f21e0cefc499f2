import type { Config } from '../../config/load.ts';
import type { BulkStore } from '../bulk.ts';
import type { PostgresStore } from './store.ts';

/**
 * PostgreSQL's part of openDatabase (../database.ts): the database at `url`, and the settings it
 * reads. Its store takes no `check`: that is SQLite's quick_check of its file. The driver is loaded
 * only when one is opened: loading `pg` costs a process about 0.1 s of CPU, which a service or a
 * command on SQLite has no use for.
 */
export function postgresDatabase(
  url: string,
  settings: Pick<Config, 'databaseTimeoutMs' | 'databasePoolSize'> & Partial<Pick<Config, 'changesRetentionMs'>>,
) {
  return {
    openStore: async (): Promise<PostgresStore> =>
      (await import('./store.ts')).openPostgresStore(url, {
        poolSize: settings.databasePoolSize,
        statementTimeoutMs: settings.databaseTimeoutMs,
        changesRetentionMs: settings.changesRetentionMs,
      }),
    openBulk: async (): Promise<BulkStore> =>
      (await import('./bulk.ts')).openPostgresBulk(url, settings.databaseTimeoutMs),
  };
}
