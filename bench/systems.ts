import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Launch } from './child-server.ts';
import { LAYERS } from './layers.ts';
import { postgresPids, seedPostgres } from './postgres.ts';
import { seedJsonServer, seedSqlite } from './seed-files.ts';
import type { ServiceEntry } from './service-build.ts';
import type { CreateStyle, WorkloadName } from './workloads.ts';
import type { RequestPlan } from './wrk.ts';

export type LayerId = `layer-${1 | 2 | 3 | 4 | 5 | 6 | 7 | 8}`;
/** The products measured beside the service (bench/peers/), each on SQLite and on PostgreSQL. */
export type PeerId = 'directus-sqlite' | 'directus-postgres';
export type SystemId =
  'ceiling-a' | 'ceiling-b' | 'naive' | 'json-server' | 'sqlite' | 'sqlite-tokens' | 'postgres' | LayerId | PeerId;

export interface SystemSpec {
  id: SystemId;
  label: string;
  createStyle: CreateStyle;
  /** Whether the listing (`listPath`) answers exactly the contract's bytes (json-server pretty-prints and adds ids). */
  contractListing: boolean;
  /** The path that lists every record, `/users` unless the system has its own (a peer's API). */
  listPath?: string;
  /** A peer's own requests for a workload, in place of the contract's (workloadPlan). */
  requests?(workload: WorkloadName, records: number): RequestPlan;
  /** How long a start may take before it counts as failed (60 s unless said). */
  startTimeoutMs?: number;
  /**
   * Untimed load of `read` run once after each start, for a system whose first seconds of load run
   * well below its plateau (JIT warm-up of a large code base); each workload keeps its own warm-up too.
   */
  serverWarmupMs?: number;
  /** Processes outside the server that do its work (PostgreSQL), counted as its database CPU. */
  helperPids?: () => number[];
  /** Headers every request carries (a bearer token). */
  headers?: Record<string, string>;
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
 * The service as users run it: every default (security headers, metrics, overload shedding, the
 * access log at info, written to a file) except the per-client rate limit, since all the load
 * comes from one address at thousands of requests a second.
 */
function userRecords(
  root: string,
  args: string[],
  databaseUrl: string,
  port: number,
  dir: string,
  extra: Record<string, string> = {},
): Launch {
  // One worker: every system gets one process, whose PID the CPU and memory figures read.
  const env = { DATABASE_URL: databaseUrl, WORKERS: '1', RATE_LIMIT: 'off', ...extra };
  return { ...nodeScript(root, args, env, port), logFile: join(dir, 'service.log') };
}

/** Random bearer tokens for the runs with API_TOKENS set (a fresh pair for each bench). */
const READ_TOKEN = randomBytes(24).toString('hex');
const WRITE_TOKEN = randomBytes(24).toString('hex');
const TOKENS = { API_TOKENS: `read:${READ_TOKEN},write:${WRITE_TOKEN}` };
const BEARER = { authorization: `Bearer ${WRITE_TOKEN}` };

/** The price list's servers: the service with its first n layers on (bench/layered-server.ts). */
export const LAYER_COUNT = LAYERS.length;

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
        return userRecords(root, service.args, file, port, dir);
      },
    },
    {
      id: 'sqlite-tokens',
      label: 'user-records (SQLite, API_TOKENS)',
      createStyle: 'query',
      contractListing: true,
      headers: BEARER,
      prepare: async (records, dir, port) => {
        const file = join(dir, 'users.db');
        await seedSqlite(file, records);
        return userRecords(root, service.args, file, port, dir, TOKENS);
      },
    },
    ...Array.from({ length: LAYER_COUNT }, (_, i): SystemSpec => {
      const layers = i + 1;
      return {
        id: `layer-${layers}` as LayerId,
        label: `price list: ${LAYERS[i]}`,
        createStyle: 'query',
        contractListing: false,
        headers: BEARER,
        prepare: async (records, dir, port) => {
          const file = join(dir, 'users.db');
          await seedSqlite(file, records);
          return userRecords(root, service.layeredArgs, file, port, dir, { ...TOKENS, LAYERS: String(layers) });
        },
      };
    }),
  ];
  if (postgresUrl !== undefined) {
    list.push({
      id: 'postgres',
      label: 'user-records (PostgreSQL)',
      createStyle: 'query',
      contractListing: true,
      helperPids: postgresPids(postgresUrl),
      prepare: async (records, dir, port) => {
        await seedPostgres(postgresUrl, records);
        return userRecords(root, service.args, postgresUrl, port, dir);
      },
    });
  }
  return list;
}
