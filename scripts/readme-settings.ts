// Rewrites the README's settings table from the settings definitions (src/config/settings.ts);
// test/readme.test.ts fails while the two differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { settingsTable } from '../src/config/help.ts';

const path = new URL('../README.md', import.meta.url);
const readme = readFileSync(path, 'utf8');
const block = /(<!-- settings:start -->\n)[\s\S]*?(<!-- settings:end -->)/;
if (!block.test(readme)) throw new Error('README.md has no <!-- settings:start --> ... <!-- settings:end --> block');
writeFileSync(
  path,
  readme.replace(block, (_all, start: string, end: string) => `${start}${settingsTable()}\n${end}`),
);
console.log('README.md: settings table rewritten');
