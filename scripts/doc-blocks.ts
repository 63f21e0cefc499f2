// The parts of the docs made from their sources, each between `<!-- NAME:start -->` and
// `<!-- NAME:end -->` in its file: `node --import tsx scripts/generate-docs.ts` rewrites them all,
// `npm run bench` rewrites the figures after a full run, and test/docs/readme.test.ts fails while any
// block differs from what its source makes.
import { readFileSync, writeFileSync } from 'node:fs';
import { performanceSection, performanceSummary } from '../bench/performance-section.ts';
import type { BenchResults } from '../bench/results.ts';
import { settingsTable } from '../src/config/help.ts';
import { PROBLEM_CASES } from '../src/http/problem-cases.ts';
import { PROBLEMS, type ProblemCode } from '../src/http/problem.ts';
import { ERROR_MEANINGS } from '../src/http/schemas.ts';

export const ROOT = new URL('..', import.meta.url).pathname;

/** The committed results of the last full bench run, which the figures show. */
export function latestResults(): BenchResults {
  return JSON.parse(readFileSync(`${ROOT}bench/results/latest.json`, 'utf8')) as BenchResults;
}

/** Every problem type, by status: its type, status, title and when it is answered. */
export function problemTable(): string {
  const codes = (Object.keys(PROBLEMS) as ProblemCode[]).sort((a, b) => PROBLEMS[a].status - PROBLEMS[b].status);
  const rows = codes.map(
    (code) => `| \`/problems/${code}\` | ${PROBLEMS[code].status} | ${PROBLEMS[code].title} | ${PROBLEM_CASES[code]} |`,
  );
  return ['| type | status | title | when |', '|---|---|---|---|', ...rows].join('\n');
}

/** The error statuses as the OpenAPI document describes them (ERROR_MEANINGS). */
export function statusTable(): string {
  const rows = Object.entries(ERROR_MEANINGS).map(([status, meaning]) => `| ${status} | ${meaning} |`);
  return ['| status | what `/openapi.json` says |', '|---|---|', ...rows].join('\n');
}

export interface DocBlock {
  /** The file, from the repository's root. */
  file: string;
  name: string;
  make: () => string;
}

export const DOC_BLOCKS: DocBlock[] = [
  { file: 'docs/operations.md', name: 'settings', make: settingsTable },
  { file: 'docs/api.md', name: 'problems', make: problemTable },
  { file: 'docs/api.md', name: 'statuses', make: statusTable },
  { file: 'docs/performance.md', name: 'performance', make: () => performanceSection(latestResults()) },
  { file: 'README.md', name: 'performance-summary', make: () => performanceSummary(latestResults()) },
];

const markers = (name: string) => new RegExp(`(<!-- ${name}:start -->\\n)([\\s\\S]*?)\\n?(<!-- ${name}:end -->)`);

/** The text between a block's markers, or undefined when the file has no such block. */
export function blockIn(text: string, name: string): string | undefined {
  return markers(name).exec(text)?.[2];
}

/** Rewrites the named blocks (all by default) in their files; returns the files changed. */
export function writeDocBlocks(names?: readonly string[]): string[] {
  const changed = new Set<string>();
  for (const block of DOC_BLOCKS) {
    if (names !== undefined && !names.includes(block.name)) continue;
    const path = `${ROOT}${block.file}`;
    const text = readFileSync(path, 'utf8');
    if (blockIn(text, block.name) === undefined)
      throw new Error(`${block.file} has no <!-- ${block.name}:start --> ... <!-- ${block.name}:end --> block`);
    const next = text.replace(
      markers(block.name),
      (_all, start: string, _old: string, end: string) => `${start}${block.make()}\n${end}`,
    );
    if (next !== text) {
      writeFileSync(path, next);
      changed.add(block.file);
    }
  }
  return [...changed];
}
