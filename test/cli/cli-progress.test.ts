import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BIN, runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
/** The escape character that starts a terminal's control sequences. */
const ESC = '\u001b';
/** `script` (util-linux) runs a command on a pseudo-terminal of its own; without it the terminal cases are skipped. */
const SCRIPT = ['/usr/bin/script', '/bin/script'].find((path) => existsSync(path));
const noScript = SCRIPT === undefined && 'no script (util-linux) for a pseudo-terminal';

/** A frame: what the terminal shows after one redraw (each starts with a carriage return), and when its chunk came. */
interface Frame {
  at: number;
  text: string;
}

/**
 * Runs a shell command on a pseudo-terminal and keeps the time each chunk of its output came, to
 * read the screen over time (no duration is asserted on: the machine is busy).
 */
async function onTerminal(command: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; frames: Frame[] }> {
  const child = spawn(SCRIPT as string, ['-qec', command, '/dev/null'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const frames: Frame[] = [];
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const at = performance.now();
    for (const text of chunk.split(/\r|\n/)) {
      const plain = text.replace(new RegExp(`${ESC}(\\[[0-9;?]*[A-Za-z]|[78])`, 'g'), '');
      if (plain !== '') frames.push({ at, text: plain });
    }
  });
  const timer = setTimeout(() => child.kill(), 120_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  return { code, frames };
}

const quote = (words: string[]) => words.map((word) => `'${word}'`).join(' ');

/** The names of the phases a command's frames show, each once, in the order they came. */
function phases(command: string, frames: Frame[]): string[] {
  const names: string[] = [];
  const named = new RegExp(`^${command}: ([a-z ]+?)(?:[:(|[]| [|/\\\\-] |$)`);
  for (const { text } of frames) {
    const name = named.exec(text)?.[1]?.trim();
    if (name !== undefined && names.at(-1) !== name) names.push(name);
  }
  return names;
}

/** The phases each command goes through on SQLite, in order. */
const IMPORT = [
  'opening the database',
  'reading',
  'storing',
  'building indexes',
  'filling the search index',
  'logging changes',
  'syncing to disk',
];
const CASES = [
  {
    command: 'backup',
    phases: ['opening the database', 'counting', 'writing records', 'writing idempotency keys', 'syncing to disk'],
  },
  {
    command: 'restore',
    phases: [
      'opening the database',
      'reading',
      'checking the checksum',
      'building indexes',
      'filling the search index',
      'syncing to disk',
    ],
  },
  { command: 'export', phases: ['opening the database', 'counting', 'writing records', 'syncing to disk'] },
];

/** A time left of nothing, where the time is the whole of it ("10s left" and "1m00s left" are not). */
const ZERO_LEFT = /(?<![\dm])0s left/;

// Progress does not depend on the store: SQLite files only.
describe('progress of a long command', () => {
  const folder = tempDir('user-records-progress-');
  after(folder.cleanup);
  // Lines are redrawn five times a second: enough rows that an import's reading takes well over that.
  const rows = 200_000;
  const csv = join(folder.dir, 'many.csv');
  const db = join(folder.dir, 'many.db');
  const fewRows = 3_000;
  const fewCsv = join(folder.dir, 'few.csv');
  let databases = 0;
  const people = (count: number) =>
    `name,age,city\n${Array.from({ length: count }, (_, i) => `Person ${i},${i % 151},Town`).join('\n')}\n`;
  before(() => {
    writeFileSync(csv, people(rows));
    writeFileSync(fewCsv, people(fewRows));
  });

  it(
    'on a terminal, an import: each phase named while it runs, the reading a bar redrawn, never "0s left"',
    { skip: noScript },
    async () => {
      const { code, frames } = await onTerminal(quote([process.execPath, BIN, 'import', csv]), { DATABASE_URL: db });
      const all = frames.map((frame) => frame.text).join('\n');
      assert.equal(code, 0, all.slice(-2000));
      assert.deepEqual(phases('import', frames), IMPORT, all.slice(-2000));
      const bar = /^import: reading \[[\u2588\u2591]{20}\] (\d+)% \| (\d+) rows \| (\d+) rows\/s \| (\S+) left$/;
      const drawn = frames.filter((frame) => frame.text.startsWith('import: reading ['));
      assert.ok(drawn.length >= 2, `frames of the bar: ${JSON.stringify(drawn)}`);
      for (const frame of drawn) assert.match(frame.text, bar);
      assert.ok(
        drawn.some((frame) => Number(bar.exec(frame.text)?.[3]) > 0),
        'a rate above 0 rows/s',
      );
      // While bytes remain, a time left above 0 or not known yet; never 0.
      for (const frame of drawn) assert.doesNotMatch(frame.text, /\| 0s left/);
      // "0s left" as a whole time: "10s left" or "1m00s left" on a slow machine is no fault.
      assert.doesNotMatch(all, ZERO_LEFT, 'no "0s left" anywhere');
      // Each phase's last line stays, with its duration; the reading's with all the rows at 100%.
      assert.match(all, new RegExp(`^import: reading: ${rows} rows, [1-9]\\d* rows/s, 100% \\(\\d+\\.\\ds\\)$`, 'm'));
      for (const name of IMPORT.slice(2)) assert.match(all, new RegExp(`^import: ${name} \\(\\d+\\.\\ds\\)$`, 'm'));
      assert.ok(all.includes(`imported ${rows} records (ids 1 to ${rows})`), all.slice(-300));
    },
  );

  for (const { command, phases: expected } of CASES) {
    it(`on a terminal, ${command}: each phase named in order`, { skip: noScript }, async () => {
      const file = join(folder.dir, `${command}.out`);
      const args =
        command === 'restore'
          ? ['restore', join(folder.dir, 'backup.out')]
          : [command, command === 'export' ? file : file];
      const env = { DATABASE_URL: command === 'restore' ? join(folder.dir, `restored-${++databases}.db`) : db };
      const { code, frames } = await onTerminal(quote([process.execPath, BIN, ...args]), env);
      const all = frames.map((frame) => frame.text).join('\n');
      assert.equal(code, 0, all.slice(-2000));
      assert.deepEqual(phases(command, frames), expected, all.slice(-2000));
      assert.doesNotMatch(all, ZERO_LEFT, 'no "0s left"');
    });
  }

  it(
    'on a terminal, a phase without a count: a spinner and its elapsed time, redrawn while it waits',
    { skip: noScript },
    async () => {
      const program = join(folder.dir, 'wait.mts');
      writeFileSync(
        program,
        `import { Progress } from ${JSON.stringify(`${ROOT}src/cli/progress.ts`)};
       const progress = new Progress('wait', { quiet: false });
       progress.phase('waiting');
       await new Promise((resolve) => setTimeout(resolve, 1500));
       progress.finish();\n`,
      );
      const { code, frames } = await onTerminal(quote([process.execPath, '--import', 'tsx', program]), {});
      assert.equal(code, 0, JSON.stringify(frames));
      const ticks = frames.filter((frame) => /^wait: waiting [|/\\-] \d+s$/.test(frame.text));
      assert.ok(ticks.length >= 2, JSON.stringify(frames));
      assert.ok(
        ticks.some((frame) => frame.text.endsWith(' 1s')),
        'the elapsed time goes on',
      );
      assert.match(frames.at(-1)?.text ?? '', /^wait: waiting \(1\.\ds\)$/);
    },
  );

  it("not on a terminal: a line as each phase ends (and a counted one's a second), no redraws; --quiet: none", async () => {
    const plain = await runCli(['import', fewCsv], {
      env: { DATABASE_URL: join(folder.dir, `plain-${++databases}.db`) },
    });
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout, `imported ${fewRows} records (ids 1 to ${fewRows})\n`);
    assert.ok(!plain.stderr.includes('\r') && !plain.stderr.includes(ESC), 'no terminal codes');
    assert.ok(plain.stderr.endsWith('\n'), 'whole lines');
    const lines = plain.stderr.split('\n').filter((text) => text !== '');
    const ends = lines.filter((line) => / \(\d+\.\ds\)$/.test(line));
    assert.deepEqual(
      ends.map((line) => /^import: ([a-z ]+)/.exec(line)?.[1]?.trim()),
      IMPORT,
      plain.stderr,
    );
    for (const line of lines.filter((text) => !ends.includes(text)))
      assert.match(line, /^import: reading: \d+ rows, \d+ rows\/s, \d+%$/);
    assert.ok(
      ends.includes(
        ends.find((line) => new RegExp(`^import: reading: ${fewRows} rows, [1-9]\\d* rows/s, 100% `).test(line)) ?? '',
      ),
      plain.stderr,
    );
    const quiet = await runCli(['import', fewCsv, '--quiet'], {
      env: { DATABASE_URL: join(folder.dir, `quiet-${++databases}.db`) },
    });
    assert.deepEqual([quiet.code, quiet.stderr], [0, '']);
  });
});
