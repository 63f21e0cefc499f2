import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { blockIn, DOC_BLOCKS, latestResults, ROOT } from '../../scripts/doc-blocks.ts';
import { serverForSuite, tempDir } from '../helpers/server.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { docExamples } from '../helpers/doc-examples.ts';

/** Each console block of examples, and what its commands must use between them. */
const EXAMPLE_BLOCKS = [
  { file: 'README.md', name: 'examples', uses: ['/users?', 'X POST', 'X PATCH', 'X DELETE', '/users/events'] },
  {
    file: 'docs/api.md',
    name: 'api-examples',
    uses: [
      '/users?',
      'X POST',
      'X PUT',
      'X PATCH',
      'X DELETE',
      '-I http',
      '/users/1',
      '/users/stats',
      '/users/events',
      '/healthz',
      '/readyz',
      '/metrics',
      '/openapi.json',
      '/docs',
      '/admin',
      '/auth/scope',
    ],
  },
];

// The examples, run exactly as written (only the port differs), each block on an empty database.
for (const backend of BACKENDS) {
  for (const { file, name, uses } of EXAMPLE_BLOCKS) {
    describe(`${file} examples [${backend.name}]`, { skip: backend.skip }, () => {
      const server = serverForSuite({}, backend);
      const examples = docExamples(file, name);
      // The files examples write (curl --etag-save) go to a directory of their own.
      const scratch = tempDir('user-records-readme-');
      after(scratch.cleanup);

      it(`use ${uses.join(' ')}`, () => {
        const commands = examples.map((example) => example.command).join('\n');
        for (const fragment of uses) assert.ok(commands.includes(fragment), `no example uses ${fragment}`);
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
}

// The settings, the problem types and the bench's figures are made from their sources; the docs
// must show exactly that (npm run docs rewrites them).
describe('generated blocks of the docs', () => {
  for (const block of DOC_BLOCKS) {
    it(`${block.file} ${block.name} is what its source makes`, () => {
      const text = readFileSync(`${ROOT}${block.file}`, 'utf8');
      const shown = blockIn(text, block.name);
      assert.ok(shown !== undefined, `${block.file} has no <!-- ${block.name}:start --> block`);
      assert.equal(shown, block.make(), `${block.file}'s ${block.name} block is stale: run npm run docs`);
    });
  }
});

// The figures are those of the committed full bench run, of the code as it is.
describe('performance figures', () => {
  const results = latestResults();

  // Figures name the code they measured; a later change to src/ does not make them wrong, only older.
  it('name the clean commit they measured, which is in this history', (t) => {
    assert.equal(results.meta.clean, true, 'the bench ran with uncommitted changes');
    for (const file of ['docs/performance.md', 'README.md']) {
      const text = readFileSync(`${ROOT}${file}`, 'utf8');
      assert.ok(
        text.includes(`commit \`${results.meta.commit.slice(0, 12)}\``),
        `${file}'s figures do not name commit ${results.meta.commit.slice(0, 12)}`,
      );
    }
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
