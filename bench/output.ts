import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { throughputChart } from './chart.ts';
import { legend, resultsTable, targetLines } from './report.ts';
import type { BenchResults } from './results.ts';
import { toMarkdown, toText } from './table-format.ts';

/** The printed report: the table, what its columns mean, the targets, anything skipped. */
export function printable(results: BenchResults): string {
  const passed = results.targets.filter((t) => t.pass === true).length;
  const failed = results.targets.filter((t) => t.pass === false).length;
  return [
    toText(resultsTable(results)),
    '',
    ...legend(results),
    '',
    `Targets (${passed} pass, ${failed} fail, ${results.targets.length - passed - failed} not measured):`,
    ...targetLines(results),
    ...results.skipped.map((line) => `skipped: ${line}`),
  ].join('\n');
}

/** Writes latest.json, latest.md and throughput.svg into `dir`; returns their paths. */
export function writeResults(results: BenchResults, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const m = results.meta;
  const markdown = [
    `# user-records benchmark (${m.mode})`,
    '',
    `${m.date}, Node ${m.node}, ${m.cpus} CPUs, ${Math.round(m.totalSeconds)} s in all.`,
    '',
    toMarkdown(resultsTable(results)),
    '',
    ...legend(results).map((line) => `- ${line}`),
    '',
    '## Targets',
    '',
    ...targetLines(results).map((line) => `- ${line}`),
    ...(results.skipped.length > 0 ? ['', '## Skipped', '', ...results.skipped.map((line) => `- ${line}`)] : []),
    '',
    '![throughput against records stored](throughput.svg)',
    '',
  ].join('\n');
  const files = {
    'latest.json': `${JSON.stringify(results, null, 2)}\n`,
    'latest.md': markdown,
    'throughput.svg': throughputChart(results),
  };
  return Object.entries(files).map(([name, text]) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  });
}
