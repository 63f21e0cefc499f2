import { join } from 'node:path';
import type { Launch } from './child-server.ts';
import { postgresPids, seedPostgres } from './postgres.ts';
import { seedJsonServer, seedSqlite } from './seed-files.ts';
import type { ServiceEntry } from './service-build.ts';
import type { CreateStyle } from './workloads.ts';

export type SystemId = 'ceiling-a' | 'ceiling-b' | 'naive' | 'json-server' | 'sqlite' | 'postgres';

export interface SystemSpec {
  id: SystemId;
  label: string;
  createStyle: CreateStyle;
  /** Whether `GET /users` answers exactly the contract's bytes (json-server pretty-prints and adds ids). */
  contractListing: boolean;
  /** Processes outside the server that do its work (PostgreSQL), counted as its database CPU. */
  helperPids?: () => number[];
  /** Seeds `records` records under `dir` and says how to start the system on `port`. */
  prepare(records: number, dir: string, port: number): Promise<Launch>;
}

function nodeScript(root: string, args: string[], env: Record<string, string>, port: number): Launch {
  return {
    argv: [process.execPath, ...args],
    env: { ...env, PORT: String(port), HOST: '127.0.0.1' },
    cwd: root,
    readyPath: '/healthz',
  };
}

const ts = (script: string) => ['--import', 'tsx', script];

/**
 * The service, logging at warn (no line per request) as json-server runs with --quiet. All load
 * comes from one address at thousands of requests a second, so the per-client rate limit is off.
 */
function userRecords(root: string, service: ServiceEntry, databaseUrl: string, port: number): Launch {
  // One worker: every system gets one process, whose PID the CPU and memory figures read.
  const env = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', WORKERS: '1', RATE_LIMIT: 'off' };
  return nodeScript(root, service.args, env, port);
}

/** Every system the bench knows; PostgreSQL only when a cluster URL is given. */
export function systems(root: string, service: ServiceEntry, postgresUrl: string | undefined): SystemSpec[] {
  const list: SystemSpec[] = [
    {
      id: 'ceiling-a',
      label: 'ceiling A (bare Fastify)',
      createStyle: 'query',
      contractListing: false,
      prepare: async (_records, _dir, port) => nodeScript(root, ts('bench/baselines/ceiling-fastify.ts'), {}, port),
    },
    {
      id: 'ceiling-b',
      label: 'ceiling B (node:http Buffer)',
      createStyle: 'query',
      contractListing: true,
      prepare: async (records, _dir, port) =>
        nodeScript(root, ts('bench/baselines/ceiling-http.ts'), { SEED_RECORDS: String(records) }, port),
    },
    {
      id: 'naive',
      label: 'naive (Express + array)',
      createStyle: 'query',
      contractListing: true,
      prepare: async (records, _dir, port) =>
        nodeScript(root, ts('bench/baselines/naive-express.ts'), { SEED_RECORDS: String(records) }, port),
    },
    {
      id: 'json-server',
      label: 'json-server 0.17.4',
      createStyle: 'json',
      contractListing: false,
      prepare: async (records, dir, port) => {
        const file = join(dir, 'db.json');
        seedJsonServer(file, records);
        const bin = join(root, 'node_modules/json-server/lib/cli/bin.js');
        // --quiet turns off its per-request log, as LOG_LEVEL=warn does for the service.
        const argv = [process.execPath, bin, '--quiet', '--host', '127.0.0.1', '--port', String(port), file];
        return { argv, env: {}, cwd: dir, readyPath: '/users?_limit=1' };
      },
    },
    {
      id: 'sqlite',
      label: 'user-records (SQLite)',
      createStyle: 'query',
      contractListing: true,
      prepare: async (records, dir, port) => {
        const file = join(dir, 'users.db');
        await seedSqlite(file, records);
        return userRecords(root, service, file, port);
      },
    },
  ];
  if (postgresUrl !== undefined) {
    list.push({
      id: 'postgres',
      label: 'user-records (PostgreSQL)',
      createStyle: 'query',
      contractListing: true,
      helperPids: postgresPids(postgresUrl),
      prepare: async (records, _dir, port) => {
        await seedPostgres(postgresUrl, records);
        return userRecords(root, service, postgresUrl, port);
      },
    });
  }
  return list;
}
