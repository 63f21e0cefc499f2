import { fsyncBound } from './fsync-latency.ts';
import { micros, priceListTable, targetLines } from './report.ts';
import type { BenchResults, RunRecord, StageRecord } from './results.ts';
import type { SystemId } from './systems.ts';
import { toMarkdown } from './table-format.ts';
import { ceilingOf, cpuPerRequest, cpuRatio, findRun, peerOf } from './targets.ts';
import { QUERY_WORKLOADS, WORKLOAD_LABELS, type WorkloadName } from './workloads.ts';

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits });
const x = (ratio: number) => `${ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2)}×`;

const COLUMNS: Array<{ system: SystemId; title: string }> = [
  { system: 'sqlite', title: 'user-records SQLite' },
  { system: 'postgres', title: 'user-records PostgreSQL' },
  { system: 'naive', title: 'Express + array (nothing durable)' },
  { system: 'json-server', title: 'json-server 0.17.4' },
];

/** CPU per request and rate, each with its ratio to the ceiling in brackets, and the p99 when asked. */
function rate(results: BenchResults, system: SystemId, workload: WorkloadName, records: number, p99 = false): string {
  const run: RunRecord | undefined = findRun(results.runs, system, workload, records);
  if (run === undefined) return '';
  const ceiling = ceilingOf(results.runs, run);
  const against = ceiling === undefined || ceiling === run ? undefined : ceiling;
  const cpu = cpuPerRequest(run);
  const cpuTimes = against === undefined ? undefined : cpuRatio(run, against);
  const cpuText = cpu === undefined ? '' : `${micros(cpu)} µs${cpuTimes === undefined ? '' : ` (${x(cpuTimes)})`}, `;
  const ratio = against === undefined ? '' : ` (${x(run.requestsPerSecond / against.requestsPerSecond)})`;
  return `${cpuText}${fmt(run.requestsPerSecond)}/s${ratio}${p99 ? `, p99 ${fmt(run.p99Ms, 1)} ms` : ''}`;
}

/** Creates at 10 and 64 connections as a share of what the disk allows (one fsync per batch). */
function durableLine(results: BenchResults): string {
  const disk = results.fsync;
  if (disk === undefined) return '';
  const share = (system: SystemId, workload: WorkloadName, connections: number) => {
    const run = findRun(results.runs, system, workload, 1_000);
    return run === undefined
      ? undefined
      : `${fmt(run.requestsPerSecond)}/s (${x(run.requestsPerSecond / fsyncBound(disk, connections))})`;
  };
  const parts = (
    [
      ['SQLite', 'sqlite'],
      ['PostgreSQL', 'postgres'],
    ] as const
  ).flatMap(([name, system]) => {
    const at10 = share(system, 'create', 10);
    const at64 = share(system, 'create-64', 64);
    return at10 === undefined
      ? []
      : [`${name} ${at10} at 10 connections${at64 === undefined ? '' : `, ${at64} at 64`}`];
  });
  return `Durable writes: this disk's write + fdatasync takes ${fmt(disk.medianMs, 2)} ms (median; p99 ${fmt(disk.p99Ms, 2)} ms), so with one commit per batch at most ${fmt(fsyncBound(disk, 10))} creates/s at 10 connections and ${fmt(fsyncBound(disk, 64))}/s at 64; creates, as a share of that bound: ${parts.join('; ') || 'not measured'}.`;
}

function stageOf(results: BenchResults, system: SystemId, records: number): StageRecord | undefined {
  return results.stages.find((stage) => stage.system === system && stage.records === records);
}

const PEER_ROWS: Array<[WorkloadName, number]> = [
  ['create', 1_000],
  ['read', 1_000],
  ['mix', 1_000],
  ['page', 1_000],
  ['list', 10_000],
  ['list', 100_000],
  ['create', 100_000],
  ['read', 1_000_000],
  ['create', 1_000_000],
];

/**
 * The service beside Directus, each database beside the same database, measured in the same run:
 * requests/s, and how many times Directus's rate the service's is. Empty when Directus did not run.
 * `settingsLink` is the path to docs/comparison.md from where the table is shown ('' for none).
 */
export function directusTable(results: BenchResults, settingsLink = 'docs/comparison.md'): string {
  const pairs = (
    [
      ['sqlite', 'directus-sqlite', 'SQLite'],
      ['postgres', 'directus-postgres', 'PostgreSQL'],
    ] as const
  ).filter(([, peer]) => results.stages.some((stage) => stage.system === peer));
  if (pairs.length === 0) return '';
  const label = results.meta.labels['directus-sqlite']?.replace(/ \(.*\)$/, '') ?? 'Directus';
  const cell = (system: SystemId, workload: WorkloadName, records: number) => {
    const run = findRun(results.runs, system, workload, records);
    return run === undefined ? '' : `${fmt(run.requestsPerSecond)}/s`;
  };
  const times = (system: SystemId, workload: WorkloadName, records: number) => {
    const run = findRun(results.runs, system, workload, records);
    const peer = run === undefined ? undefined : peerOf(results.runs, run, 'directus');
    return run === undefined || peer === undefined ? '' : x(run.requestsPerSecond / peer.requestsPerSecond);
  };
  const atRest = (system: SystemId) => {
    const stage = stageOf(results, system, 1_000_000);
    return stage?.startupMs === undefined ? '' : `${fmt(stage.startupMs / 1000, 2)} s, ${fmt(stage.rssAtRestMB)} MB`;
  };
  const listing = (system: SystemId) => {
    const full = stageOf(results, system, 1_000_000)?.fullListing;
    return full === undefined ? '' : `${fmt(full.ttfbMs, 1)} ms, ${fmt(full.peakRssMB)} MB`;
  };
  const rows = PEER_ROWS.filter(([workload, records]) =>
    pairs.some(([, peer]) => findRun(results.runs, peer, workload, records) !== undefined),
  ).map(([workload, records]) => [
    `${WORKLOAD_LABELS[workload]}, ${records >= 1_000_000 ? `${records / 1_000_000}M` : `${records / 1_000}k`} records`,
    ...pairs.flatMap(([mine, peer]) => [
      cell(mine, workload, records),
      cell(peer, workload, records),
      times(mine, workload, records),
    ]),
  ]);
  for (const [title, value] of [
    ['1M records: start-up, memory at rest', atRest],
    ['1M records: full listing, first byte, peak memory', listing],
  ] as const) {
    if (pairs.some(([, peer]) => value(peer) !== ''))
      rows.push([title, ...pairs.flatMap(([mine, peer]) => [value(mine), value(peer), ''])]);
  }
  const warmups = results.stages.filter((stage) => stage.system === pairs[0]?.[1]).map((s) => s.serverWarmupMs ?? 0);
  const warmup =
    Math.max(0, ...warmups) > 0 ? `, ${fmt(Math.max(...warmups) / 1000)} s of untimed reads after each start` : '';
  const table = {
    header: ['', ...pairs.flatMap(([, , db]) => [`user-records ${db}`, `${label} ${db}`, `× ${label.split(' ')[0]}`])],
    right: [false, ...pairs.flatMap(() => [true, true, true])],
    rows,
  };
  return [
    `${label} in the same run, on the same databases, through its own API (\`/items/users\` with \`fields=name,age,city\`, creates and reads with its static admin token; caching and rate limiting off, log level \`warn\`${warmup}${settingsLink === '' ? '' : `; see [docs/comparison.md](${settingsLink})`}). × is the service's rate over ${label.split(' ')[0]}'s:`,
    '',
    toMarkdown(table),
    '',
  ].join('\n');
}

/**
 * The figures of docs/performance.md, made from a bench run's results (bench/results/latest.json):
 * `npm run bench` writes them there, and test/docs/readme.test.ts fails while the page shows anything
 * else. So the docs never show figures of code that is not what was measured.
 */
export function performanceSection(results: BenchResults): string {
  const m = results.meta;
  const rows: Array<[string, (system: SystemId) => string]> = [
    ['create, 1k records, every answer fsync’d', (s) => rate(results, s, 'create', 1_000, true)],
    ['create at 64 connections, 1k records', (s) => rate(results, s, 'create-64', 1_000, true)],
    ['read one, 1k records', (s) => rate(results, s, 'read', 1_000)],
    ['90/10 read/write, 1k records', (s) => rate(results, s, 'mix', 1_000)],
    ['list all at 100k records (× ceiling B)', (s) => rate(results, s, 'list', 100_000)],
    [
      '1M records: start-up, memory at rest',
      (s) => {
        const stage = stageOf(results, s, 1_000_000);
        return stage?.startupMs === undefined
          ? ''
          : `${fmt(stage.startupMs / 1000, 2)} s, ${fmt(stage.rssAtRestMB)} MB`;
      },
    ],
    [
      '1M records: full listing, first byte, peak memory',
      (s) => {
        const listing = stageOf(results, s, 1_000_000)?.fullListing;
        return listing === undefined ? '' : `${fmt(listing.ttfbMs, 1)} ms, ${fmt(listing.peakRssMB)} MB`;
      },
    ],
    [
      'create and read one at 1M records',
      (s) => {
        const create = findRun(results.runs, s, 'create', 1_000_000);
        const read = findRun(results.runs, s, 'read', 1_000_000);
        return create === undefined || read === undefined
          ? ''
          : `${fmt(create.requestsPerSecond)}/s, ${fmt(read.requestsPerSecond)}/s`;
      },
    ],
  ];
  const columns = COLUMNS.filter(({ system }) => results.runs.some((run) => run.system === system));
  const table = {
    header: ['', ...columns.map((column) => column.title)],
    right: [false, ...columns.map(() => true)],
    rows: rows
      .map(([label, cell]) => [label, ...columns.map((column) => cell(column.system))])
      .filter((cells) => cells.slice(1).some((cell) => cell !== '')),
  };
  const queryColumns = (['sqlite', 'postgres'] as const)
    .filter((system) => results.runs.some((run) => run.system === system))
    .flatMap((system) => [1_000, 1_000_000].map((records) => ({ system, records })));
  const queries = {
    header: [
      'GET /users query',
      ...queryColumns.map(
        ({ system, records }) => `${system === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${records === 1_000 ? '1k' : '1M'}`,
      ),
    ],
    right: [false, ...queryColumns.map(() => true)],
    rows: [...QUERY_WORKLOADS, 'count-city' as const].map((workload) => [
      WORKLOAD_LABELS[workload],
      ...queryColumns.map(({ system, records }) => {
        const run = findRun(results.runs, system, workload, records);
        const cpu = run === undefined ? undefined : cpuPerRequest(run);
        return run === undefined
          ? ''
          : `${cpu === undefined ? '' : `${micros(cpu)} µs, `}${fmt(run.requestsPerSecond)}/s, p99 ${fmt(run.p99Ms, 1)} ms`;
      }),
    ]),
  };
  const ceilingA = findRun(results.runs, 'ceiling-a', 'read', 1_000);
  const healthz = findRun(results.runs, 'sqlite', 'healthz', 1_000);
  const ceilingHealthz = findRun(results.runs, 'ceiling-a', 'healthz', 1_000);
  const passed = results.targets.filter((target) => target.pass === true).length;
  return [
    `Last full run: commit \`${m.commit.slice(0, 12)}\`${m.clean ? '' : ' (with uncommitted changes)'}, ${m.date.slice(0, 10)}, Node ${m.node}, ${m.cpus} cores, load from ${m.generator ?? 'autocannon'}${m.dataset === undefined ? '' : ` on ${m.dataset} records`}; the service as \`npm start\` runs it, with its defaults (access log at \`info\` to a file) and \`RATE_LIMIT=off\`. Each cell: CPU time per request (server and database), then requests/s; the ratios in brackets are to ceiling A (a bare Fastify route), or ceiling B for listings, measured in the same run: its CPU per request over this one's, this rate over its rate${ceilingA === undefined ? '' : ` (ceiling A: ${micros(cpuPerRequest(ceilingA))} µs, ${fmt(ceilingA.requestsPerSecond)} reads/s)`}.`,
    '',
    toMarkdown(table),
    '',
    healthz === undefined || ceilingHealthz === undefined
      ? ''
      : `\`GET /healthz\`: ${rate(results, 'sqlite', 'healthz', 1_000)} against ceiling A.`,
    '',
    ...(durableLine(results) === '' ? [] : [durableLine(results), '']),
    ...(results.cli === undefined
      ? []
      : [
          `The command line as a user runs it (\`node bin/user-records.mjs\`, from the packed layout): \`--version\` ${fmt(results.cli.versionMs)} ms, \`--help\` ${fmt(results.cli.helpMs)} ms, against ${fmt(results.cli.nodeMs)} ms for \`node -e 0\`.`,
          '',
        ]),
    ...(directusTable(results) === '' ? [] : [directusTable(results)]),
    'The queries of `GET /users` (10 connections; the count of one city at 1), as CPU per request, requests/s and p99:',
    '',
    toMarkdown(queries),
    '',
    'The price list: reading one record with the layers of the request path added one at a time (`bench/layered-server.ts`), as server CPU per request and requests/s:',
    '',
    toMarkdown(priceListTable(results)),
    '',
    `${passed} of ${results.targets.length} targets pass:`,
    '',
    ...targetLines(results).map((line) => `- ${line.replace(/^(PASS|FAIL|n\/a) +/, '$1 ')}`),
  ].join('\n');
}

/**
 * The README's few figures from the same run, with its commit: the front door quotes them and links
 * docs/performance.md for the rest.
 */
export function performanceSummary(results: BenchResults): string {
  const m = results.meta;
  const create = findRun(results.runs, 'sqlite', 'create', 1_000);
  const read = findRun(results.runs, 'sqlite', 'read', 1_000);
  const list = findRun(results.runs, 'sqlite', 'list', 100_000);
  const stage = stageOf(results, 'sqlite', 1_000_000);
  const passed = results.targets.filter((target) => target.pass === true).length;
  const parts = [
    create === undefined
      ? ''
      : `${fmt(create.requestsPerSecond)} creates/s, each fsync'd before its answer (p99 ${fmt(create.p99Ms, 1)} ms)`,
    read === undefined ? '' : `${fmt(read.requestsPerSecond)} reads of one record/s`,
    list === undefined ? '' : `the full listing of 100,000 records ${fmt(list.requestsPerSecond)} times a second`,
    stage?.startupMs === undefined ? '' : `a start on 1,000,000 records in ${fmt(stage.startupMs / 1000, 2)} s`,
  ].filter((part) => part !== '');
  return `On SQLite, in the last full run (commit \`${m.commit.slice(0, 12)}\`${m.clean ? '' : ' with uncommitted changes'}, ${m.date.slice(0, 10)}, ${m.cpus} cores, 10 connections): ${parts.join('; ')}. ${passed} of ${results.targets.length} targets pass.`;
}
