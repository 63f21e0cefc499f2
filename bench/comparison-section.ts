import { readFileSync, writeFileSync } from 'node:fs';
import { directusTable } from './performance-section.ts';
import type { BenchResults } from './results.ts';
import { findRun } from './targets.ts';
import type { WorkloadName } from './workloads.ts';

// node --import tsx bench/comparison-section.ts [results.json]: rewrites the measured figures of
// docs/comparison.md from a bench run (bench/results/latest.json unless named). A full run with
// Directus does this itself, as it rewrites docs/performance.md's figures.

const MARKERS = /(<!-- figures:start -->\n)[\s\S]*?(<!-- figures:end -->)/;
const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });

/** json-server's figures of the same run, in one line. */
function jsonServerLine(results: BenchResults): string {
  const cells = (
    [
      ['create', 1_000],
      ['read', 1_000],
      ['mix', 1_000],
      ['list', 10_000],
      ['list', 100_000],
    ] as Array<[WorkloadName, number]>
  ).flatMap(([workload, records]) => {
    const run = findRun(results.runs, 'json-server', workload, records);
    const name = workload === 'mix' ? '90/10 mix' : workload === 'list' ? 'list all' : workload;
    return run === undefined ? [] : [`${name} at ${records / 1000}k ${fmt(run.requestsPerSecond)}/s`];
  });
  return cells.length === 0 ? '' : `json-server 0.17.4 in the same run: ${cells.join(', ')}.`;
}

/** The figures block of docs/comparison.md, made from a run that measured Directus. */
export function comparisonFigures(results: BenchResults, source: string): string {
  const m = results.meta;
  const table = directusTable(results, '');
  if (table === '') throw new Error(`${source} has no Directus runs: run npm run bench -- --peers directus`);
  const disturbed = results.runs.filter((run) => (run.otherCpu ?? 0) > 0.5).length;
  return [
    `From \`${source}\`: ${m.mode} run${m.only === undefined ? '' : ` of ${m.only.join(', ')} only`}${m.workloads === undefined ? '' : `, workloads ${m.workloads.join(', ')}`}, commit \`${m.commit.slice(0, 12)}\`${m.clean ? '' : ' (with uncommitted changes)'}, ${m.date.slice(0, 10)}, Node ${m.node}, ${m.cpus} cores, ${m.pinning}. ${disturbed === 0 ? 'No run was disturbed by other processes.' : `${disturbed} of ${results.runs.length} runs shared the machine with other work (over half a core of "other" CPU; see the CPU column of the results), so their absolute rates are low; the ratios, measured side by side, hold better.`}`,
    '',
    table,
    jsonServerLine(results),
  ].join('\n');
}

/** docs/comparison.md with its figures replaced by those of `results`. */
export function withComparison(doc: string, results: BenchResults, source: string): string {
  if (!MARKERS.test(doc))
    throw new Error('docs/comparison.md has no <!-- figures:start --> ... <!-- figures:end --> block');
  return doc.replace(
    MARKERS,
    (_all, start: string, end: string) => `${start}${comparisonFigures(results, source)}\n${end}`,
  );
}

/** Rewrites the figures of docs/comparison.md from a results file. */
export function writeComparison(docPath: string, results: BenchResults, source: string): void {
  writeFileSync(docPath, withComparison(readFileSync(docPath, 'utf8'), results, source));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = new URL('..', import.meta.url).pathname;
  const source = process.argv[2] ?? 'bench/results/latest.json';
  const results = JSON.parse(readFileSync(`${root}${source}`, 'utf8')) as BenchResults;
  writeComparison(`${root}docs/comparison.md`, results, source);
  process.stdout.write(`docs/comparison.md: figures from ${source}\n`);
}
