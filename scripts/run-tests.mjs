// Runs every test file under test/ with Node's test runner. The files are listed explicitly because
// Node 20's runner finds no .ts files by itself. `npm test -- test/a.test.ts` runs only those files.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const given = process.argv.slice(2);
const files =
  given.length > 0
    ? given
    : readdirSync('test', { recursive: true })
        .map(String)
        .filter((file) => file.endsWith('.test.ts'))
        .map((file) => join('test', file))
        .sort();

if (files.length === 0) {
  console.error('no test files found under test/');
  process.exit(1);
}

const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
