import type { BenchResults, RunRecord, StageRecord, TargetResult } from './results.ts';
import type { Table } from './table-format.ts';
import { GENERATOR_BOUND, ceilingOf, findRun, peerOf, short } from './targets.ts';
import { WORKLOAD_LABELS } from './workloads.ts';

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { maximumFractionDigits: digits });
const ms = (n: number) => fmt(n, n < 10 ? 2 : n < 100 ? 1 : 0);
const pct = (share: number | undefined) => (share === undefined ? '–' : `${Math.round(share * 100)}%`);

function ratio(run: RunRecord, other: RunRecord | undefined): string {
  if (other === undefined || other === run) return '';
  const value = run.requestsPerSecond / other.requestsPerSecond;
  return `${value >= 10 ? value.toFixed(0) : value.toFixed(2)}×`;
}

function verdicts(targets: TargetResult[], row: { system: string; records: number; measure: string }): string {
  return targets
    .filter((t) => t.system === row.system && t.records === row.records && t.measure === row.measure)
    .map((t) => `${t.id} ${t.pass === undefined ? 'n/a' : t.pass ? 'PASS' : 'FAIL'}`)
    .join(', ');
}

function stageRows(results: BenchResults, stage: StageRecord, label: string): string[][] {
  const rows: string[][] = [];
  const restTargets = verdicts(results.targets, { ...stage, measure: 'at rest' });
  const rest = `start-up ${fmt(stage.startupMs)} ms, RSS ${fmt(stage.rssAtRestMB)} MB`;
  rows.push([label, short(stage.records), 'at rest', rest, '', '', '', '', '', '', '', '', '', restTargets]);
  const listing = stage.fullListing;
  if (listing !== undefined) {
    const text = `TTFB ${ms(listing.ttfbMs)} ms, all ${fmt(listing.totalMs)} ms, ${fmt(listing.bytes / 1e6, 1)} MB, peak RSS ${fmt(listing.peakRssMB)} MB`;
    const status = listing.status === 200 ? '0' : `${listing.status}`;
    const tags = verdicts(results.targets, { ...stage, measure: 'full listing' });
    rows.push([label, short(stage.records), 'full listing', text, '', '', '', status, '', '', '', '', '', tags]);
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
    rows.push([
      label,
      short(run.records),
      WORKLOAD_LABELS[run.workload],
      `${fmt(run.requestsPerSecond)} req/s`,
      ms(run.p50Ms),
      ms(run.p99Ms),
      String(run.errors),
      String(run.non2xx),
      `${pct(run.serverCpu)}${run.databaseCpu === undefined ? '' : `+${pct(run.databaseCpu)}`} / ${pct(run.generatorCpu)}${bound} / ${pct(run.otherCpu)}${run.attempts > 1 ? ' ↻' : ''}`,
      ratio(run, ceilingOf(results.runs, run)),
      ratio(run, findRun(results.runs, 'naive', run.workload, run.records)),
      ratio(run, findRun(results.runs, 'json-server', run.workload, run.records)),
      ratio(run, peerOf(results.runs, run, 'directus')),
      verdicts(results.targets, { system: run.system, records: run.records, measure: run.workload }),
    ]);
  }
  if (stage.problems.length > 0) {
    rows.push([
      label,
      short(stage.records),
      'PROBLEM',
      stage.problems.join('; ').replaceAll('\n', ' '),
      ...Array<string>(10).fill(''),
    ]);
  }
  return rows;
}

/** The one results table: every system at every record count, its runs, ratios and targets side by side. */
export function resultsTable(results: BenchResults): Table {
  const header = ['system', 'records', 'measure', 'result', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'];
  header.push('CPU srv/gen/other', '× ceiling', '× naive', '× json-server', '× Directus', 'targets');
  const rows: string[][] = [];
  const order = Object.keys(results.meta.labels);
  const stages = [...results.stages].sort(
    (a, b) => a.records - b.records || order.indexOf(a.system) - order.indexOf(b.system),
  );
  for (const stage of stages.filter((row) => !isLayer(row.system)))
    rows.push(...stageRows(results, stage, results.meta.labels[stage.system] ?? stage.system));
  const right = [false, true, false, true, true, true, true, true, true, true, true, true, true, false];
  return { header, right, rows };
}

const isLayer = (system: string) => system.startsWith('layer-');

/** CPU time of the server per request, in µs, when measured. */
export function cpuPerRequest(run: RunRecord): number | undefined {
  return run.serverCpu === undefined || run.requestsPerSecond === 0
    ? undefined
    : (run.serverCpu * 1e6) / run.requestsPerSecond;
}

/**
 * The price list: reading one record (GET /users/:id) with the service's layers added one at a
 * time, each row one layer more, as requests/s and as server CPU per request; what each layer adds
 * is the difference to the row above. Ceiling A (a bare Fastify route) stands above them.
 */
export function priceListTable(results: BenchResults): Table {
  const header = ['layers', 'req/s', 'CPU µs/request', 'layer adds µs', '× ceiling A'];
  const rows: string[][] = [];
  const ceiling = findRun(results.runs, 'ceiling-a', 'read', 1_000);
  const layers = results.runs.filter((run) => isLayer(run.system) && run.workload === 'read');
  layers.sort((a, b) => Number(a.system.slice(6)) - Number(b.system.slice(6)));
  if (ceiling !== undefined) {
    rows.push([
      'ceiling A (bare Fastify route, no app)',
      fmt(ceiling.requestsPerSecond),
      fmt(cpuPerRequest(ceiling), 1),
      '',
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
      fmt(run.requestsPerSecond),
      fmt(cpu, 1),
      added,
      ratio(run, ceiling) || '',
    ]);
  }
  return { header, right: [false, true, true, true, true], rows };
}

/** One line per target: what it asks, what was measured, PASS or FAIL. */
export function targetLines(results: BenchResults): string[] {
  return results.targets.map((t) => {
    const verdict = t.pass === undefined ? 'n/a ' : t.pass ? 'PASS' : 'FAIL';
    const who = results.meta.labels[t.system] ?? t.system;
    return `${verdict}  ${t.id.padEnd(3)} ${who}: ${t.description} — measured ${t.measured}${t.note === undefined ? '' : ` (${t.note})`}`;
  });
}

/** What the numbers mean, printed under the table. */
export function legend(results: BenchResults): string[] {
  const m = results.meta;
  return [
    `Each run: ${m.connections} connections, ${m.warmupMs / 1000} s warm-up then ${m.durationMs / 1000} s measured (up to ${m.maxDurationMs / 1000} s until ${m.minResponses} answers for slow ones); req/s and latency from the measured window, errors and non-2xx over the whole run.`,
    `× ceiling: against ceiling B (same records) for "list all", ceiling A otherwise; × naive / × json-server: same workload, same records, this run; × Directus: against Directus on the same database (SQLite for the systems without one), same workload, same records, this run (Directus's own requests: bench/peers/directus/NOTES.md).`,
    `CPU srv/gen/other: share of one core used in the window by the server (+ its PostgreSQL processes), by the load generator (this process) and by every other process on the machine; "!" marks a generator at ≥${GENERATOR_BOUND * 100}%, where the generator may be the limit; a high "other" means the figures were disturbed, and "↻" a run repeated for that reason (the calmer one is shown).`,
    `${m.service}; ${m.pinning}. MB = 10^6 bytes (VmRSS/VmHWM from /proc). Start-up: spawn to the first 200 on /healthz (json-server: /users?_limit=1; Directus: /items/users?fields=id&limit=1).`,
  ];
}
