import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { join } from 'node:path';
import pg from 'pg';
import { tempDir } from './server.ts';

/** A new, empty database for one test or suite. */
export interface Database {
  /** Its DATABASE_URL. */
  url: string;
  drop(): Promise<void>;
}

/** A storage backend the same tests run against, in a loop (STYLE.md item 7). */
export interface Backend {
  name: 'sqlite' | 'postgresql';
  fresh(): Promise<Database>;
  /** Why this backend cannot run here (a node:test skip reason), or false. */
  skip: string | false;
}

const scratch = tempDir('user-records-db-');
process.once('exit', scratch.cleanup);
let files = 0;

const sqlite: Backend = {
  name: 'sqlite',
  skip: false,
  fresh: async () => ({ url: join(scratch.dir, `users-${++files}.db`), drop: async () => undefined }),
};

// scripts/run-tests.ts sets TEST_DATABASE_URL (a throwaway cluster, or the one given). Each fresh
// database is a schema of its own there, which is quicker than CREATE DATABASE by far.
const server = process.env.TEST_DATABASE_URL || undefined;
const required = process.env.TEST_POSTGRES_REQUIRED === '1';

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * DROP SCHEMA ... CASCADE, again when PostgreSQL ends it as a deadlock: after a SIGKILL, the killed
 * service's sessions can still be finishing a write that locks the tables in the other order.
 */
async function dropSchema(client: pg.Client, schema: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt === 5) throw error;
    }
  }
}

/**
 * pg_trgm once, in the public schema. Each test database is a schema of one PostgreSQL database, and
 * an extension belongs to the database: made by the first migration in that test's schema, it
 * would go with that schema's DROP ... CASCADE, and with it every other schema's search indexes.
 */
export async function sharedExtensions(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public');
  } finally {
    await client.end();
  }
}

let extensions: Promise<void> | undefined;

const postgresql: Backend = {
  name: 'postgresql',
  skip:
    server === undefined && !required
      ? 'PostgreSQL half skipped: no TEST_DATABASE_URL (run the tests with npm test, which starts PostgreSQL)'
      : false,
  fresh: async () => {
    if (server === undefined) throw new Error('TEST_POSTGRES_REQUIRED=1 but no TEST_DATABASE_URL is set');
    extensions ??= sharedExtensions(server);
    await extensions;
    const schema = `test_${randomBytes(6).toString('hex')}`;
    await withAdmin((client) => client.query(`CREATE SCHEMA ${schema}`));
    const url = new URL(server);
    url.searchParams.set('options', `-c search_path=${schema}`);
    return {
      url: url.toString(),
      drop: () => withAdmin((client) => dropSchema(client, schema)),
    };
  },
};

export const BACKENDS: readonly Backend[] = [sqlite, postgresql];

/** Fresh databases of `backend` for each test that asks, dropped after the suite. */
export function databases(backend: Backend): () => Promise<Database> {
  const made: Database[] = [];
  after(async () => {
    for (const database of made) await database.drop();
  });
  return async () => {
    const database = await backend.fresh();
    made.push(database);
    return database;
  };
}
