import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { readmePerformance, withPerformance } from '../bench/readme-section.ts';
import type { BenchResults } from '../bench/results.ts';
import { settingsTable } from '../src/config/help.ts';
import { serverForSuite, tempDir } from './helpers/server.ts';
import { BACKENDS } from './helpers/backends.ts';
import { readmeExamples } from './helpers/readme-examples.ts';

// The README's examples, run exactly as written (only the port differs) on an empty database.
for (const backend of BACKENDS) {
  describe(`README examples [${backend.name}]`, { skip: backend.skip }, () => {
    const server = serverForSuite({}, backend);
    const examples = readmeExamples('examples');
    // The files examples write (curl --etag-save) go to a directory of their own.
    const scratch = tempDir('user-records-readme-');
    after(scratch.cleanup);

    it('has examples for every endpoint', () => {
      const commands = examples.map((example) => example.command).join('\n');
      for (const fragment of [
        '/users?',
        'X POST',
        'X PUT',
        'X PATCH',
        'X DELETE',
        '-I http',
        '/users/1',
        '/healthz',
        '/readyz',
        '/admin',
        '/auth/scope',
      ]) {
        assert.ok(commands.includes(fragment), `no example uses ${fragment}`);
      }
    });

    for (const [i, example] of examples.entries()) {
      it(`${i + 1}: ${example.command}`, () => {
        const command = example.command.replaceAll('http://127.0.0.1:3000', server.url);
        const output = execFileSync('bash', ['-c', command], { cwd: scratch.dir, encoding: 'utf8', timeout: 10_000 });
        // A console shows output without a final newline on a line of its own, so line ends are compared trimmed.
        assert.equal(output.replace(/\r/g, '').trimEnd(), example.expected.trimEnd());
      });
    }
  });
}

describe('README settings table', () => {
  it('is the one the settings definitions make (node --import tsx scripts/readme-settings.ts rewrites it)', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const table = /<!-- settings:start -->\n([\s\S]*?)\n<!-- settings:end -->/.exec(readme)?.[1];
    assert.ok(table !== undefined, 'README has no settings block');
    assert.equal(table, settingsTable());
  });
});

// The README's Performance figures are those of the committed full bench run, of the code as it is.
describe('README performance figures', () => {
  const ROOT = new URL('..', import.meta.url).pathname;
  const results = JSON.parse(readFileSync(`${ROOT}bench/results/latest.json`, 'utf8')) as BenchResults;

  it('are exactly what bench/results/latest.json makes of them', () => {
    const readme = readFileSync(`${ROOT}README.md`, 'utf8');
    assert.equal(readmePerformance(readme), readmePerformance(withPerformance(readme, results)));
  });

  // Figures name the code they measured; a later change to src/ does not make them wrong, only older.
  it('name the clean commit they measured, which is in this history', (t) => {
    assert.equal(results.meta.clean, true, 'the bench ran with uncommitted changes');
    const readme = readFileSync(`${ROOT}README.md`, 'utf8');
    assert.ok(
      readme.includes(`commit \`${results.meta.commit.slice(0, 12)}\``),
      `the README's figures do not name commit ${results.meta.commit.slice(0, 12)}`,
    );
    try {
      execFileSync('git', ['cat-file', '-e', `${results.meta.commit}^{commit}`], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      // A copy without the history (a tarball, a shallow clone) cannot tell; a clone can.
      const shallow = execFileSync('git', ['rev-parse', '--is-shallow-repository'], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
      if (shallow === 'true') {
        t.skip(`shallow history: cannot find ${results.meta.commit.slice(0, 12)}`);
        return;
      }
      assert.fail(`the measured commit ${results.meta.commit.slice(0, 12)} is not in this history: ${String(error)}`);
    }
  });
});
