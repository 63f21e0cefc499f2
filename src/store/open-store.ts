import type { DatabaseConfig } from '../config.ts';
import { openSqliteStore } from './sqlite-store.ts';
import type { UserStore } from './store.ts';

/** The store a DATABASE_URL names. */
export function openStore(database: DatabaseConfig): UserStore {
  switch (database.kind) {
    case 'sqlite':
      return openSqliteStore(database.path);
  }
}
