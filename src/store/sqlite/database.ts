import type { Config } from '../../config/load.ts';
import type { BulkStore } from '../bulk.ts';
import { openSqliteBulk } from './bulk.ts';
import { openSqliteStore, type SqliteStore } from './store.ts';

/** SQLite's part of openDatabase (../database.ts): the file at `path`, and the settings it reads. */
export function sqliteDatabase(
  path: string,
  settings: Pick<Config, 'databaseTimeoutMs'> &
    Partial<Pick<Config, 'changesRetentionMs' | 'sqliteReaders' | 'sqliteReadQueue'>>,
) {
  return {
    openStore: (): Promise<SqliteStore> =>
      openSqliteStore(path, {
        busyTimeoutMs: settings.databaseTimeoutMs,
        changesRetentionMs: settings.changesRetentionMs,
        readers: settings.sqliteReaders,
        readQueue: settings.sqliteReadQueue,
      }),
    openBulk: (options: { existing?: boolean } = {}): Promise<BulkStore> =>
      openSqliteBulk(path, settings.databaseTimeoutMs, options.existing === true),
  };
}
