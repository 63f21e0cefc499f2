import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { throughputChart } from './chart.ts';
import { legend, priceListTable, resultsTable, targetLines } from './report.ts';
import type { BenchResults } from './results.ts';
import { toMarkdown, toText } from './table-format.ts';

/** The printed report: the table, what its columns mean, the targets, anything skipped. */
export function printable(results: BenchResults): string {
  const passed = results.targets.filter((t) => t.pass === true).length;
  const failed = results.targets.filter((t) => t.pass === false).length;
  const prices = priceListTable(results);
  return [
    toText(resultsTable(results)),
    '',
    ...(prices.rows.length === 0
      ? []
      : ['Price list (read one record, the layers added one at a time):', toText(prices), '']),
    ...legend(results),
    '',
    `Targets (${passed} pass, ${failed} fail, ${results.targets.length - passed - failed} not measured):`,
    ...targetLines(results),
    ...results.skipped.map((line) => `skipped: ${line}`),
  ].join('\n');
}

/** Writes <name>.json, <name>.md and <name>.svg (the chart) into `dir`; returns their paths. */
export function writeResults(results: BenchResults, dir: string, name: string): string[] {
  mkdirSync(dir, { recursive: true });
  const m = results.meta;
  const markdown = [
    `# user-records benchmark (${m.mode}${m.only === undefined ? '' : `, only ${m.only.join(', ')}`}${m.workloads === undefined ? '' : `, workloads ${m.workloads.join(', ')}`})`,
    '',
    `${m.date}, Node ${m.node}, ${m.cpus} CPUs, ${Math.round(m.totalSeconds)} s in all; commit ${m.commit}${m.clean ? '' : ' with uncommitted changes'}.`,
    '',
    toMarkdown(resultsTable(results)),
    '',
    ...(priceListTable(results).rows.length === 0
      ? []
      : [
          '## Price list',
          '',
          'Reading one record (`GET /users/:id`), the layers of the request path added one at a time:',
          '',
          toMarkdown(priceListTable(results)),
          '',
        ]),
    ...legend(results).map((line) => `- ${line}`),
    '',
    '## Targets',
    '',
    ...targetLines(results).map((line) => `- ${line}`),
    ...(results.skipped.length > 0 ? ['', '## Skipped', '', ...results.skipped.map((line) => `- ${line}`)] : []),
    '',
    `![throughput against records stored](${name === 'latest' ? 'throughput' : name}.svg)`,
    '',
  ].join('\n');
  const files = {
    [`${name}.json`]: `${JSON.stringify(results, null, 2)}\n`,
    [`${name}.md`]: markdown,
    [`${name === 'latest' ? 'throughput' : name}.svg`]: throughputChart(results),
  };
  return Object.entries(files).map(([name, text]) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  });
}
