import type { Config } from '../../config/load.ts';
import type { BulkStore } from '../bulk.ts';
import { openPostgresBulk } from './bulk.ts';
import { openPostgresStore, type PostgresStore } from './store.ts';

/**
 * PostgreSQL's part of openDatabase (../database.ts): the database at `url`, and the settings it
 * reads. Its store takes no `check`: that is SQLite's quick_check of its file.
 */
export function postgresDatabase(
  url: string,
  settings: Pick<Config, 'databaseTimeoutMs' | 'databasePoolSize'> & Partial<Pick<Config, 'changesRetentionMs'>>,
) {
  return {
    openStore: (): Promise<PostgresStore> =>
      openPostgresStore(url, {
        poolSize: settings.databasePoolSize,
        statementTimeoutMs: settings.databaseTimeoutMs,
        changesRetentionMs: settings.changesRetentionMs,
      }),
    openBulk: (): Promise<BulkStore> => openPostgresBulk(url, settings.databaseTimeoutMs),
  };
}
