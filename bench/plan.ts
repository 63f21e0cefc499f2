import { LAYER_COUNT, type PeerId, type SystemId } from './systems.ts';
import { QUERY_WORKLOADS, type WorkloadName } from './workloads.ts';

/** What to do with one system at one record count; workloads run in this order (writes last). */
export interface StageStep {
  system: SystemId;
  workloads: WorkloadName[];
  /** One `GET /users` read to the end, timed, with the server's peak memory. */
  fullListing?: boolean;
  /** Bytes and server CPU of `GET /users` and `GET /users/1` as identity, gzip and br (compression.ts). */
  compression?: boolean;
}

export interface Stage {
  records: number;
  steps: StageStep[];
}

export interface Timing {
  warmupMs: number;
  durationMs: number;
  /** Slow workloads (a few answers a second) are measured longer, up to maxDurationMs, to get this many answers. */
  minResponses: number;
  maxDurationMs: number;
  connections: number;
}

const EVERYTHING: WorkloadName[] = ['list', 'read', 'mix', 'create'];
const SERVICE: SystemId[] = ['sqlite', 'postgres'];

/** The queries of GET /users and its counts by group, at 1k and at 1M records, where the targets compare them. */
const QUERIES: WorkloadName[] = [...QUERY_WORKLOADS, 'count-city', 'stats-city'];

const forService = (workloads: WorkloadName[], fullListing = false, compression = false): StageStep[] =>
  SERVICE.map((system) => ({ system, workloads, fullListing, compression: compression && system === 'sqlite' }));

/** The price list: the service with its layers added one at a time, each reading one record. */
const PRICE_LIST: StageStep[] = Array.from({ length: LAYER_COUNT }, (_, i) => ({
  system: `layer-${i + 1}` as SystemId,
  workloads: ['read'],
}));

/**
 * The full plan: every system at 1k; the record-dependent ones at 10k and 100k; the service, the
 * naive baseline and ceiling B at 1M. json-server stops at 100k for reads and 10k for creates,
 * since each of its writes rewrites its whole file. Ceiling A does not depend on records: once.
 */
const FULL: Stage[] = [
  {
    records: 1_000,
    steps: [
      { system: 'ceiling-a', workloads: [...EVERYTHING, 'healthz'] },
      { system: 'ceiling-b', workloads: ['list'] },
      { system: 'naive', workloads: EVERYTHING },
      { system: 'json-server', workloads: EVERYTHING },
      {
        system: 'sqlite',
        workloads: ['list', 'page', 'read', ...QUERIES, 'mix', 'create', 'create-64', 'healthz'],
        compression: true,
      },
      { system: 'postgres', workloads: ['list', 'page', 'read', ...QUERIES, 'mix', 'create', 'create-64'] },
      { system: 'sqlite-tokens', workloads: ['read', 'mix', 'create'] },
      ...PRICE_LIST,
    ],
  },
  {
    records: 10_000,
    steps: [
      { system: 'ceiling-b', workloads: ['list'] },
      { system: 'naive', workloads: ['list', 'read', 'create'] },
      { system: 'json-server', workloads: ['list', 'read', 'create'] },
      ...forService(['list', 'read', 'create']),
    ],
  },
  {
    records: 100_000,
    steps: [
      { system: 'ceiling-b', workloads: ['list'] },
      { system: 'naive', workloads: ['list', 'read', 'create'] },
      { system: 'json-server', workloads: ['list', 'read'] },
      ...forService(['list', 'read', 'create'], false, true),
    ],
  },
  {
    records: 1_000_000,
    steps: [
      { system: 'ceiling-b', workloads: [], fullListing: true },
      { system: 'naive', workloads: ['read', 'create'], fullListing: true },
      ...forService(['read', ...QUERIES, 'create'], true),
    ],
  },
];

/** The quick pass: only the runs the targets need, with short runs. */
const QUICK: Stage[] = [
  {
    records: 1_000,
    steps: [
      { system: 'ceiling-a', workloads: ['read', 'mix', 'create', 'healthz'] },
      { system: 'naive', workloads: ['create'] },
      {
        system: 'sqlite',
        workloads: ['page', 'read', ...QUERIES, 'mix', 'create', 'create-64', 'healthz'],
        compression: true,
      },
      { system: 'postgres', workloads: ['page', 'read', ...QUERIES, 'mix', 'create', 'create-64'] },
      { system: 'sqlite-tokens', workloads: ['read', 'create'] },
      ...PRICE_LIST,
    ],
  },
  {
    records: 10_000,
    steps: [{ system: 'json-server', workloads: ['create'] }, ...forService(['create'])],
  },
  {
    records: 100_000,
    steps: [{ system: 'ceiling-b', workloads: ['list'] }, ...forService(['list'], false, true)],
  },
  { records: 1_000_000, steps: forService(['read', ...QUERIES, 'create'], true) },
];

/**
 * The peers' steps (bench/peers/), each peer on SQLite and on PostgreSQL, added after the other
 * systems of a stage: the workloads they have an equivalent of (not the service's queries), at the
 * record counts the service runs them; at 1M (full run only), start-up, memory, the full listing,
 * read one and create.
 */
function peerSteps(peers: PeerId[], quick: boolean): Map<number, StageStep[]> {
  const at = (workloads: WorkloadName[], fullListing = false) =>
    peers.map((system): StageStep => ({ system, workloads, fullListing }));
  return quick
    ? new Map([
        [1_000, at(['page', 'read', 'mix', 'create'])],
        [100_000, at(['list'])],
      ])
    : new Map([
        [1_000, at(['list', 'page', 'read', 'mix', 'create'])],
        [10_000, at(['list', 'read', 'create'])],
        [100_000, at(['list', 'read', 'create'])],
        [1_000_000, at(['read', 'create'], true)],
      ]);
}

/**
 * The stages of a run: the quick or the full plan, the peers' steps added, and, when `only`,
 * `workloads` or `records` is given, only those systems, workloads and record counts (a narrowed
 * run, never the figures' record; a 1M stage keeps its start-up, memory and full listing whatever
 * the workloads). Ceiling A runs at 1k whatever the record count, as the ratios need it.
 */
export function plan(
  quick: boolean,
  peers: PeerId[] = [],
  only?: readonly SystemId[],
  workloads?: readonly WorkloadName[],
  records?: number,
): { stages: Stage[]; timing: Timing } {
  const extra = peerSteps(peers, quick);
  const stages = (quick ? QUICK : FULL)
    .map((stage) => ({ ...stage, steps: [...stage.steps, ...(extra.get(stage.records) ?? [])] }))
    .map((stage) => ({
      ...stage,
      steps: stage.steps
        .filter((step) => only === undefined || only.includes(step.system))
        .map((step) => ({
          ...step,
          workloads: step.workloads.filter((name) => workloads === undefined || workloads.includes(name)),
        }))
        .filter((step) => step.workloads.length > 0 || step.fullListing === true),
    }))
    .map((stage) => ({
      ...stage,
      steps: stage.steps.filter(
        (step) => records === undefined || stage.records === records || step.system === 'ceiling-a',
      ),
    }))
    .filter((stage) => stage.steps.length > 0);
  return { stages, timing: timing(quick) };
}

function timing(quick: boolean): Timing {
  return quick
    ? { warmupMs: 400, durationMs: 1_200, minResponses: 20, maxDurationMs: 2_500, connections: 10 }
    : { warmupMs: 1_000, durationMs: 3_000, minResponses: 20, maxDurationMs: 10_000, connections: 10 };
}
