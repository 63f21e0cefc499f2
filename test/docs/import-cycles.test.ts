import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

const SRC = new URL('../../src', import.meta.url).pathname;

/** The files of ours a source names: imports, `export ... from` and `import()`, types too. */
function importsOf(file: string, text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map(({ fileName }) => fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => join(dirname(file), name));
}

/** Each import cycle once, as its files from the first in sort order round to it again. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found = new Set<string>();
  const path: string[] = [];
  const done = new Set<string>();
  const visit = (file: string) => {
    if (path.includes(file)) {
      const cycle = path.slice(path.indexOf(file));
      const first = cycle.indexOf([...cycle].sort()[0] as string);
      found.add([...cycle.slice(first), ...cycle.slice(0, first), cycle[first]].join(' -> '));
      return;
    }
    if (done.has(file) || !graph.has(file)) return;
    path.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return [...found];
}

const graphOf = (sources: Record<string, string>) =>
  new Map(Object.entries(sources).map(([file, text]) => [file, importsOf(file, text)]));

// A cycle makes what a module holds at load depend on who loaded it first, and pulls a folder's
// neighbours into every bundle of it (the SQLite threads once carried PostgreSQL's code this way).
describe('imports', () => {
  const CASES: { name: string; sources: Record<string, string>; expected: string[] }[] = [
    { name: 'none', sources: { 'a.ts': `import { b } from './b.ts';`, 'b.ts': '' }, expected: [] },
    {
      name: 'of two files, an import over several lines and a type',
      sources: { 'a.ts': `import {\n  b,\n} from './b.ts';`, 'b.ts': `import type { A } from './a.ts';` },
      expected: ['a.ts -> b.ts -> a.ts'],
    },
    {
      name: 'through a folder, a re-export and a dynamic import',
      sources: {
        'x/c.ts': `export { d } from '../d.ts';`,
        'd.ts': `const e = await import('./e.ts');`,
        'e.ts': `import { c } from './x/c.ts';`,
      },
      expected: ['d.ts -> e.ts -> x/c.ts -> d.ts'],
    },
  ];
  for (const { name, sources, expected } of CASES) {
    it(`finds cycles: ${name}`, () => assert.deepEqual(cycles(graphOf(sources)), expected));
  }

  it('src/ has no import cycle', () => {
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) => /\.tsx?$/.test(file));
    assert.ok(files.length > 50);
    const graph = graphOf(Object.fromEntries(files.map((file) => [file, readFileSync(join(SRC, file), 'utf8')])));
    // Every import of ours is found as a file, so no edge of the graph is lost to its spelling.
    const unknown = [...graph.values()].flat().filter((file) => !graph.has(file) && !file.startsWith('..'));
    assert.deepEqual(unknown, []);
    assert.deepEqual(cycles(graph), []);
  });
});
