import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('../..', import.meta.url).pathname;
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** The first code block after a heading: the folder picture of a page. */
function pictureUnder(file: string, heading: string): string {
  const text = read(file);
  const at = text.indexOf(`\n${heading}\n`);
  assert.ok(at >= 0, `${file} has no "${heading}"`);
  const block = /```\n([\s\S]*?)```/.exec(text.slice(at))?.[1];
  assert.ok(block !== undefined, `${file} has no picture under "${heading}"`);
  return block;
}

const names = (picture: string) => new Set(picture.match(/[\w.-]+\/?/g));
const FOLDERS = readdirSync(join(ROOT, 'src')).filter((name) => statSync(join(ROOT, 'src', name)).isDirectory());
/** Every file name of src/, in any folder. */
const SRC_FILES = new Set(
  readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).map((path) => path.split('/').at(-1)),
);
/** The lines of a picture about src/: under a `src/` line, the indented ones; else all of them. */
function srcPart(picture: string): string {
  const lines = picture.split('\n');
  const start = lines.indexOf('src/');
  if (start < 0) return picture;
  const end = lines.findIndex((line, i) => i > start && !line.startsWith(' '));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}
const MAPS = [
  { file: 'README.md', heading: '## Map' },
  { file: 'docs/architecture.md', heading: '## The folders, and the one rule between them' },
];

// Each map shows every folder of src/, and names no file of src/ that is gone (the README's named a
// config.ts for a long while after it became config/).
describe('maps of the code', () => {
  for (const { file, heading } of MAPS) {
    it(`${file} shows every folder of src/`, () => {
      const shown = names(pictureUnder(file, heading));
      const missing = FOLDERS.filter((folder) => !shown.has(`${folder}/`));
      assert.deepEqual(missing, [], `${file} leaves out ${missing.join(', ')}`);
    });

    it(`${file} names only files of src/ that exist`, () => {
      const files = [...names(srcPart(pictureUnder(file, heading)))].filter((name) => name.endsWith('.ts'));
      assert.ok(files.length > 0);
      const gone = files.filter((name) => !SRC_FILES.has(name));
      assert.deepEqual(gone, [], `${file} names ${gone.join(', ')}, not in src/`);
    });
  }

  it('the README shows every top folder that holds code or docs', () => {
    const shown = names(pictureUnder('README.md', '## Map'));
    for (const folder of ['admin', 'bench', 'bin', 'client', 'docs', 'scripts', 'src', 'test'])
      assert.ok(shown.has(`${folder}/`), `the README's map leaves out ${folder}/`);
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} +(.+)$/gm)) {
    const base = anchor(heading ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

const PAGES = [
  'README.md',
  'bench/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

// A link that points nowhere is found here rather than by a reader: every relative link of the README,
// bench/README.md and docs/*.md names a file that exists, and a heading of it that exists.
describe('links between the docs', () => {
  for (const page of PAGES) {
    it(`${page}: every relative link resolves`, () => {
      const text = read(page).replace(/```[\s\S]*?```/g, '');
      const broken: string[] = [];
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (target === undefined || /^[a-z]+:/.test(target)) continue;
        const [path = '', hash] = target.split('#');
        const file = path === '' ? page : relative(ROOT, join(ROOT, dirname(page), path));
        if (!existsSync(join(ROOT, file))) broken.push(`${target} (no ${file})`);
        else if (hash !== undefined && file.endsWith('.md') && !anchorsOf(read(file)).has(hash))
          broken.push(`${target} (no heading #${hash} in ${file})`);
      }
      assert.deepEqual(broken, []);
    });
  }
});
