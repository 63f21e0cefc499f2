import { fsyncBound } from './fsync-latency.ts';
import type { BenchResults, RunRecord, StageRecord, TargetResult } from './results.ts';
import type { Table } from './table-format.ts';
import { GENERATOR_BOUND, ceilingOf, cpuPerRequest, cpuRatio, findRun, peerOf, short, x } from './targets.ts';
import { WORKLOAD_CONNECTIONS, WORKLOAD_LABELS } from './workloads.ts';

export { cpuPerRequest };

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits });
const ms = (n: number) => fmt(n, n < 10 ? 2 : n < 100 ? 1 : 0);
const pct = (share: number | undefined) => (share === undefined ? '–' : `${Math.round(share * 100)}%`);
/** CPU per request in µs, one decimal under 100. */
export const micros = (n: number | undefined) => fmt(n, n !== undefined && n < 100 ? 1 : 0);

function ratio(run: RunRecord, other: RunRecord | undefined): string {
  if (other === undefined || other === run) return '';
  return x(run.requestsPerSecond / other.requestsPerSecond);
}

function cpuTimes(run: RunRecord, other: RunRecord | undefined): string {
  const value = other === undefined || other === run ? undefined : cpuRatio(run, other);
  return value === undefined ? '' : x(value);
}

/** A create's rate over the most the disk allows at its connections (one fsync per batch). */
function fsyncShare(results: BenchResults, run: RunRecord): string {
  // The ceilings write nothing: the bound is not theirs.
  if (results.fsync === undefined || !run.workload.startsWith('create') || run.system.startsWith('ceiling')) return '';
  const connections = WORKLOAD_CONNECTIONS[run.workload] ?? results.meta.connections;
  return x(run.requestsPerSecond / fsyncBound(results.fsync, connections));
}

function verdicts(targets: TargetResult[], row: { system: string; records: number; measure: string }): string {
  return targets
    .filter((t) => t.system === row.system && t.records === row.records && t.measure === row.measure)
    .map((t) => `${t.id} ${t.pass === undefined ? 'n/a' : t.pass ? 'PASS' : 'FAIL'}`)
    .join(', ');
}

const COLUMNS = [
  ['system', false],
  ['records', true],
  ['measure', false],
  ['CPU µs/req', true],
  ['CPU × ceiling', true],
  ['result', true],
  ['req/s × ceiling', true],
  ['p50 ms', true],
  ['p99 ms', true],
  ['errors', true],
  ['non-2xx', true],
  ['CPU srv/gen/other', true],
  ['× fsync bound', true],
  ['× naive', true],
  ['× json-server', true],
  ['× Directus', true],
  ['targets', false],
] as const;
type Column = (typeof COLUMNS)[number][0];

const row = (cells: Partial<Record<Column, string>>) => COLUMNS.map(([name]) => cells[name] ?? '');

function stageRows(results: BenchResults, stage: StageRecord, label: string): string[][] {
  const rows: string[][] = [];
  const where = { system: label, records: short(stage.records) };
  rows.push(
    row({
      ...where,
      measure: 'at rest',
      result: `start-up ${fmt(stage.startupMs)} ms, RSS ${fmt(stage.rssAtRestMB)} MB`,
      targets: verdicts(results.targets, { ...stage, measure: 'at rest' }),
    }),
  );
  const listing = stage.fullListing;
  if (listing !== undefined) {
    rows.push(
      row({
        ...where,
        measure: 'full listing',
        result: `TTFB ${ms(listing.ttfbMs)} ms, all ${fmt(listing.totalMs)} ms, ${fmt(listing.bytes / 1e6, 1)} MB, peak RSS ${fmt(listing.peakRssMB)} MB`,
        'non-2xx': listing.status === 200 ? '0' : `${listing.status}`,
        targets: verdicts(results.targets, { ...stage, measure: 'full listing' }),
      }),
    );
  }
  for (const row of stage.compression ?? []) {
    const text = `${fmt(row.bytes)} bytes as ${row.sent || 'identity'}, ${ms(row.cpuMs)} ms CPU/request`;
    rows.push([
      label,
      short(stage.records),
      `GET ${row.path} ${row.coding}`,
      text,
      '',
      '',
      '',
      '',
      '',
      '',
      '',
      '',
      '',
      '',
    ]);
  }
  for (const run of results.runs.filter((r) => r.system === stage.system && r.records === stage.records)) {
    const bound = run.generatorCpu >= GENERATOR_BOUND ? ' !' : '';
    const ceiling = ceilingOf(results.runs, run);
    rows.push(
      row({
        ...where,
        measure: WORKLOAD_LABELS[run.workload],
        'CPU µs/req': micros(cpuPerRequest(run)),
        'CPU × ceiling': cpuTimes(run, ceiling),
        result: `${fmt(run.requestsPerSecond)} req/s`,
        'req/s × ceiling': ratio(run, ceiling),
        'p50 ms': ms(run.p50Ms),
        'p99 ms': ms(run.p99Ms),
        errors: String(run.errors),
        'non-2xx': String(run.non2xx),
        'CPU srv/gen/other': `${pct(run.serverCpu)}${run.databaseCpu === undefined ? '' : `+${pct(run.databaseCpu)}`} / ${pct(run.generatorCpu)}${bound} / ${pct(run.otherCpu)}${run.attempts > 1 ? ' ↻' : ''}`,
        '× fsync bound': fsyncShare(results, run),
        '× naive': ratio(run, findRun(results.runs, 'naive', run.workload, run.records)),
        '× json-server': ratio(run, findRun(results.runs, 'json-server', run.workload, run.records)),
        '× Directus': ratio(run, peerOf(results.runs, run, 'directus')),
        targets: verdicts(results.targets, { system: run.system, records: run.records, measure: run.workload }),
      }),
    );
  }
  if (stage.problems.length > 0) {
    rows.push(row({ ...where, measure: 'PROBLEM', result: stage.problems.join('; ').replaceAll('\n', ' ') }));
  }
  return rows;
}

/** The one results table: every system at every record count, its runs, ratios and targets side by side. */
export function resultsTable(results: BenchResults): Table {
  const rows: string[][] = [];
  const order = Object.keys(results.meta.labels);
  const stages = [...results.stages].sort(
    (a, b) => a.records - b.records || order.indexOf(a.system) - order.indexOf(b.system),
  );
  for (const stage of stages.filter((one) => !isLayer(one.system)))
    rows.push(...stageRows(results, stage, results.meta.labels[stage.system] ?? stage.system));
  return { header: COLUMNS.map(([name]) => name), right: COLUMNS.map(([, right]) => right), rows };
}

const isLayer = (system: string) => system.startsWith('layer-');

/**
 * The price list: reading one record (GET /users/:id) with the service's layers added one at a
 * time, each row one layer more, as server CPU per request and as requests/s; what each layer adds
 * is the difference to the row above. Ceiling A (a bare Fastify route) stands above them.
 */
export function priceListTable(results: BenchResults): Table {
  const header = ['layers', 'CPU µs/request', 'layer adds µs', 'CPU × ceiling A', 'req/s', 'req/s × ceiling A'];
  const rows: string[][] = [];
  const ceiling = findRun(results.runs, 'ceiling-a', 'read', 1_000);
  const layers = results.runs.filter((run) => isLayer(run.system) && run.workload === 'read');
  layers.sort((a, b) => Number(a.system.slice(6)) - Number(b.system.slice(6)));
  if (ceiling !== undefined) {
    rows.push([
      'ceiling A (bare Fastify route, no app)',
      micros(cpuPerRequest(ceiling)),
      '',
      '1.00×',
      fmt(ceiling.requestsPerSecond),
      '1.00×',
    ]);
  }
  let previous: number | undefined;
  for (const run of layers) {
    const cpu = cpuPerRequest(run);
    const added =
      cpu === undefined || previous === undefined ? '' : `${cpu >= previous ? '+' : ''}${fmt(cpu - previous, 1)}`;
    previous = cpu;
    rows.push([
      results.meta.labels[run.system]?.replace(/^price list: /, '') ?? run.system,
      micros(cpu),
      added,
      cpuTimes(run, ceiling),
      fmt(run.requestsPerSecond),
      ratio(run, ceiling),
    ]);
  }
  return { header, right: [false, true, true, true, true, true], rows };
}

/** One line per target: what it asks, what was measured, PASS or FAIL. */
export function targetLines(results: BenchResults): string[] {
  return results.targets.map((t) => {
    const verdict = t.pass === undefined ? 'n/a ' : t.pass ? 'PASS' : 'FAIL';
    const who = t.measure === 'command line' ? 'command line' : (results.meta.labels[t.system] ?? t.system);
    return `${verdict}  ${t.id.padEnd(3)} ${who}: ${t.description} — measured ${t.measured}${t.note === undefined ? '' : ` (${t.note})`}`;
  });
}

/** What the numbers mean, printed under the table. */
export function legend(results: BenchResults): string[] {
  const m = results.meta;
  const disk = results.fsync;
  const cli = results.cli;
  return [
    `Load from ${m.generator ?? 'autocannon'}${m.dataset === undefined ? '' : `; seeded records ${m.dataset === 'synthetic' ? 'synthetic (`user<N>`, the worst case for a substring search)' : 'realistic (@faker-js/faker, 22 locales, non-ASCII included)'}`}. CPU µs/req: the system's CPU time (server with all its threads and processes, plus PostgreSQL's) per answer, from /proc; "CPU × ceiling" is the ceiling's CPU per request over this one's (0.50× = twice the CPU), "req/s × ceiling" the rate over the ceiling's.`,
    ...(disk === undefined
      ? []
      : [
          `Disk: 4 KiB write + fdatasync beside the databases, median ${disk.medianMs.toFixed(2)} ms, p99 ${disk.p99Ms.toFixed(2)} ms (${disk.samples} writes); with one commit per batch, at most ${fmt(fsyncBound(disk, 10))} creates/s at 10 connections and ${fmt(fsyncBound(disk, 64))}/s at 64 ("× fsync bound").`,
        ]),
    ...(cli === undefined
      ? []
      : [
          `Command line (bin/user-records.mjs as packed, medians of ${cli.runs}): --version ${fmt(cli.versionMs)} ms, --help ${fmt(cli.helpMs)} ms, against node -e 0 ${fmt(cli.nodeMs)} ms.`,
        ]),
    `Each run: ${m.connections} connections, ${m.warmupMs / 1000} s warm-up then ${m.durationMs / 1000} s measured (up to ${m.maxDurationMs / 1000} s until ${m.minResponses} answers for slow ones); req/s, latency and CPU from the measured window; errors (socket errors and timeouts) and non-2xx over warm-up and window.`,
    `× ceiling: against ceiling B (same records) for "list all", ceiling A otherwise; × naive / × json-server: same workload, same records, this run; × Directus: against Directus on the same database (SQLite for the systems without one), same workload, same records, this run (Directus's own requests: bench/peers/directus/NOTES.md).`,
    `CPU srv/gen/other: share of one core used in the window by the server (+ its PostgreSQL processes), by the load generator (wrk, on its own core) and by every other process on the machine; "!" marks a generator at ≥${GENERATOR_BOUND * 100}%, where the generator may be the limit; a high "other" means the figures were disturbed, and "↻" a run repeated for that reason (the calmer one is shown).`,
    `${m.service}; ${m.pinning}. MB = 10^6 bytes (VmRSS/VmHWM from /proc). Start-up: spawn to the first 200 on /healthz (json-server: /users?_limit=1; Directus: /items/users?fields=id&limit=1).`,
  ];
}
