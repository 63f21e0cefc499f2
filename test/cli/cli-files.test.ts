import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { lstatSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { KEY_CLOCK_SKEW_MS } from '../../src/cli/backup-format.ts';
import { MAX_LINE } from '../../src/cli/lines.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { BIN, runCli } from '../helpers/cli.ts';
import { LONG } from '../helpers/scale.ts';
import { startServer, tempDir } from '../helpers/server.ts';

// Found by an outside run against the command line: each of these lost data, crashed or hung.
describe('files the command line is given that are not what they seem', () => {
  const folder = tempDir('user-records-cli-files-');
  after(folder.cleanup);
  let n = 0;
  const seeded = async () => {
    const db = join(folder.dir, `seeded-${++n}.db`);
    const imported = await runCli(['import', '-', '--format', 'ndjson', '--quiet'], {
      env: { DATABASE_URL: db },
      input: '{"name":"Ada","age":36,"city":"London"}\n{"name":"Ben","age":41,"city":"Leeds"}\n',
    });
    assert.equal(imported.code, 0, imported.stderr);
    return db;
  };
  const count = async (db: string) =>
    (await runCli(['export', '--format', 'ndjson'], { env: { DATABASE_URL: db } })).stdout.split('\n').filter(Boolean)
      .length;

  it('writes through a symbolic link to its file, and into a pipe, without replacing either', async () => {
    const db = await seeded();
    const real = join(folder.dir, 'real.csv');
    writeFileSync(real, 'old\n');
    const link = join(folder.dir, 'link.csv');
    symlinkSync(real, link);
    const viaLink = await runCli(['export', link, '--quiet'], { env: { DATABASE_URL: db } });
    assert.equal(viaLink.code, 0, viaLink.stderr);
    assert.ok(lstatSync(link).isSymbolicLink(), 'the link was replaced by a file');
    assert.equal(readFileSync(real, 'utf8'), 'name,age,city\r\nAda,36,London\r\nBen,41,Leeds\r\n');

    const fifo = join(folder.dir, 'pipe.csv');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('cat', [fifo]);
    let read = '';
    reader.stdout.setEncoding('utf8').on('data', (text: string) => (read += text));
    const closed = once(reader, 'close');
    const viaPipe = await runCli(['export', fifo, '--quiet'], { env: { DATABASE_URL: db } });
    await closed;
    assert.equal(viaPipe.code, 0, viaPipe.stderr);
    assert.ok(lstatSync(fifo).isFIFO(), 'the pipe was replaced by a file');
    assert.equal(read, 'name,age,city\r\nAda,36,London\r\nBen,41,Leeds\r\n');
  });

  it('refuses a directory as the output, and a full device says so in one line', async () => {
    const db = await seeded();
    const directory = await runCli(['backup', folder.dir], { env: { DATABASE_URL: db } });
    assert.equal(directory.code, 1);
    assert.match(directory.stderr, /^user-records: cannot write .*: it is a directory\n$/);
    const full = spawnSync(process.execPath, [BIN, 'export', '--format', 'csv'], {
      env: { ...process.env, DATABASE_URL: db },
      stdio: ['ignore', openSync('/dev/full', 'w'), 'pipe'],
      encoding: 'utf8',
    });
    assert.equal(full.status, 1);
    // The phases that ended before the write failed keep their lines (standard error is no
    // terminal); the failure is one line, the last.
    const failure = full.stderr.replace(/^export: [a-z ]+ \(\d+(\.\d+)?s\)\n/gm, '');
    assert.match(failure, /^user-records: cannot write standard output: .*no space left on device.*\n$/i);
  });

  it('never writes the rejects over the input, nor stores rows when the rejects cannot be written', async () => {
    const db = await seeded();
    const input = join(folder.dir, 'mixed.csv');
    const text = 'name,age,city\nGood,30,Oslo\nBad,151,Oslo\n';
    writeFileSync(input, text);
    const over = await runCli(['import', input, '--skip-invalid', '--rejects', input], { env: { DATABASE_URL: db } });
    assert.equal(over.code, 2);
    assert.match(over.stderr, /is the file being imported/);
    assert.equal(readFileSync(input, 'utf8'), text);
    for (const rejects of [folder.dir, join(folder.dir, 'no-such-folder', 'rejects.csv')]) {
      const refused = await runCli(['import', input, '--skip-invalid', '--rejects', rejects], {
        env: { DATABASE_URL: db },
      });
      assert.equal(refused.code, 1, refused.stderr);
      assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    }
    assert.equal(await count(db), 2, 'a good row was stored though the import failed');
  });

  // One cap for every format and for restore: a line (a record, for CSV and JSON) of more than
  // MAX_LINE is refused as soon as that much of it has come. Standard input stays open after it,
  // so a reader that waited for the line's end would never answer.
  const header = JSON.stringify({
    format: 'user-records-backup',
    formatVersion: 1,
    changeVersion: 0,
    lastId: 0,
    takenAt: '2026-11-23T00:00:00.000Z',
  });
  const long = [
    { name: 'CSV', args: ['import', '-', '--format', 'csv'], before: 'name,age,city\n', line: 2, what: 'a record' },
    {
      name: 'NDJSON',
      args: ['import', '-', '--format', 'ndjson'],
      before: '{"name":"Ada","age":1,"city":"X"}\n',
      line: 2,
      what: 'a line',
    },
    {
      name: 'a JSON array',
      args: ['import', '-', '--format', 'json'],
      before: '[{"name":"Ada","age":1,"city":"X"},\n{"name":"',
      line: 2,
      what: 'a record',
    },
    {
      name: 'a JSON object',
      args: ['import', '-', '--format', 'json'],
      before: '{',
      line: 1,
      what: 'the text before "data"',
    },
    { name: 'a backup', args: ['restore', '-'], before: `${header}\n`, line: 2, what: 'a line' },
  ];
  for (const { name, args, before, line, what } of long) {
    it(`refuses a line over ${MAX_LINE} characters in ${name} at once, naming it, with nothing stored`, async () => {
      const db = join(folder.dir, `long-${name.replaceAll(' ', '-')}.db`);
      const result = await runCli(args, {
        env: { DATABASE_URL: db },
        input: `${before}${'A'.repeat(MAX_LINE + 1)}`,
        keepStdinOpen: true,
        timeoutMs: 30_000,
      });
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        new RegExp(`line ${line}: ${what} is longer than 1 MiB.*nothing was (stored|restored)\n$`),
      );
      assert.equal(await count(db), 0);
    });
  }

  it('reads a line of exactly the cap as a row, refused by the rules of a record', async () => {
    const padding = MAX_LINE - '{"name":"","age":1,"city":"X"}'.length;
    const result = await runCli(['import', '-', '--format', 'ndjson', '--max-errors', '1'], {
      env: { DATABASE_URL: join(folder.dir, 'at-the-cap.db') },
      input: `{"name":"${'A'.repeat(padding)}","age":1,"city":"X"}\n`,
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /line 1: name /);
  });

  it(
    'refuses a 60 MB line in every format within 256 MB of memory',
    { skip: !LONG && 'long form: SUITE_SCALE=long' },
    async (t) => {
      for (const { name, args, before } of long) {
        const file = join(folder.dir, `60mb-${name.replaceAll(' ', '-')}`);
        writeFileSync(file, `${before}${'A'.repeat(60_000_000)}`);
        const measured = spawnSync(
          '/usr/bin/time',
          ['-f', 'peak %M KiB, %e s', process.execPath, BIN, ...args.slice(0, 1), file, ...args.slice(2)],
          { env: { ...process.env, DATABASE_URL: join(folder.dir, '60mb.db') }, encoding: 'utf8', timeout: 120_000 },
        );
        assert.equal(measured.status, 1, measured.stderr);
        assert.match(measured.stderr, /is longer than 1 MiB/);
        const figures = /peak (\d+) KiB, ([\d.]+) s/.exec(measured.stderr);
        assert.ok(figures !== null, measured.stderr);
        t.diagnostic(`${name}: a 60 MB line refused, ${figures[0]}`);
        assert.ok(Number(figures[1]) < 256 * 1024, `${name}: ${figures[0]}`);
      }
    },
  );

  it('refuses a header of many columns at once and in one line', async () => {
    const db = join(folder.dir, 'limits.db');
    const wide = await runCli(['import', '-', '--format', 'csv'], {
      env: { DATABASE_URL: db },
      input: `${Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',')}\n`,
    });
    assert.equal(wide.code, 1);
    assert.ok(wide.stderr.length < 300, `a reason of ${wide.stderr.length} characters`);
    assert.match(wide.stderr, /100000 columns/);
  });

  it('reads a header in any case, explains semicolons, and refuses a JSON field given twice as POST does', async () => {
    const db = join(folder.dir, 'lenient.db');
    const capital = await runCli(['import', '-', '--format', 'csv', '--quiet'], {
      env: { DATABASE_URL: db },
      input: 'Name,AGE,City\nAda,36,London\n',
    });
    assert.equal(capital.code, 0, capital.stderr);
    const semicolons = await runCli(['import', '-', '--format', 'csv'], {
      env: { DATABASE_URL: db },
      input: 'name;age;city\nAda;36;London\n',
    });
    assert.equal(semicolons.code, 1);
    assert.match(semicolons.stderr, /separated by semicolons/);
    const twice = await runCli(['import', '-', '--format', 'json'], {
      env: { DATABASE_URL: db },
      input: '[{"name":"A","age":30,"age":31,"city":"P"}]',
    });
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /line 1: row gives "age" more than once/);
    assert.equal(await count(db), 1);
  });
});

describe('restore refuses a backup the service could not have made', () => {
  const folder = tempDir('user-records-cli-forged-');
  after(folder.cleanup);
  /** A backup with a good checksum around `records` and `keys` (as `["r",...]` and `["k",...]` lines). */
  const forge = (name: string, records: unknown[][], header: Record<string, unknown> = {}, keys: unknown[][] = []) => {
    const head = JSON.stringify({
      format: 'user-records-backup',
      formatVersion: 1,
      changeVersion: 3,
      lastId: 9,
      takenAt: '2026-11-23T00:00:00.000Z',
      ...header,
    });
    const body = [
      head,
      ...records.map((record) => JSON.stringify(['r', ...record])),
      ...keys.map((key) => JSON.stringify(['k', ...key])),
    ]
      .map((line) => `${line}\n`)
      .join('');
    const sha256 = createHash('sha256').update(body).digest('hex');
    const file = join(folder.dir, `${name}.backup`);
    writeFileSync(file, `${body}${JSON.stringify({ end: { records: records.length, keys: keys.length, sha256 } })}\n`);
    return file;
  };
  const good = [1, 'Ada', 36, 'London', 1000, 2000, 2];
  const cases: Array<[string, unknown[][], Record<string, unknown>?, RegExp?]> = [
    ['id 0', [[0, 'Ada', 36, 'London', 1000, 1000, 1]], {}, /line 2: id 0 is not a whole number from 1/],
    ['an id of 16 digits', [[1e15, 'Ada', 36, 'London', 1000, 1000, 1]], { lastId: 1e15 }, /line 1: lastId/],
    ['an id beyond lastId', [good], { lastId: 0 }, /line 2: id 1 is beyond the header's lastId 0/],
    ['a name with NUL', [[1, 'A\u0000da', 36, 'London', 1000, 1000, 1]]],
    ['a name with spaces around it', [[1, ' Ada', 36, 'London', 1000, 1000, 1]], {}, /line 2: name or city/],
    ['an age of 151', [[1, 'Ada', 151, 'London', 1000, 1000, 1]]],
    ['an age as text', [[1, 'Ada', '36', 'London', 1000, 1000, 1]], {}, /line 2: name and city must be text/],
    ['version 0', [[1, 'Ada', 36, 'London', 1000, 1000, 0]], {}, /line 2: version 0/],
    // Past the ends the service keeps (up to them is restored, below).
    [
      'a version past the last PostgreSQL holds',
      [[1, 'Ada', 36, 'London', 1000, 1000, 2_147_483_648]],
      {},
      /line 2: version 2147483648 is not a whole number from 1 to 2147483647 \(PostgreSQL's INTEGER; the service refuses to change a record at it\)/,
    ],
    // Found by the fourth outside run: a record changed before it was created.
    [
      'an update before the creation',
      [[1, 'Ada', 36, 'London', 253_402_300_799_999, 0, 1]],
      {},
      /line 2: updatedAt 0 is before createdAt 253402300799999/,
    ],
    ['a negative change version', [good], { changeVersion: -5 }, /line 1: changeVersion -5/],
    [
      'a change version past the last event id the API takes',
      [good],
      { changeVersion: 1e15 },
      /line 1: changeVersion 1000000000000000 is not a whole number from 0 to 999999999999999/,
    ],
    ['a header with a field no backup has', [good], { extra: 1 }, /line 1: the header has a field "extra"/],
    ['a takenAt that is not a time', [good], { takenAt: 'yesterday' }, /line 1: takenAt "yesterday"/],
    ['a time past the year 9999', [[1, 'Ada', 36, 'London', 9e15, 9e15, 1]], {}, /line 2: createdAt 9000000000000000/],
    ['a time before 1970', [[1, 'Ada', 36, 'London', -1, 1000, 1]], {}, /line 2: createdAt -1/],
    ['a version beyond 32 bits', [[1, 'Ada', 36, 'London', 1000, 1000, 3e9]], {}, /line 2: version 3000000000/],
    ['the same id twice', [good, good], {}, /line 3: id 1 comes after id 1/],
  ];
  for (const [name, records, header, reason] of cases) {
    it(`refuses ${name}, naming the line and field, and stores nothing`, async () => {
      const db = join(folder.dir, `${name.replaceAll(' ', '-')}.db`);
      const result = await runCli(['restore', forge(name.replaceAll(' ', '-'), records, header)], {
        env: { DATABASE_URL: db },
      });
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, reason ?? /line 2: /);
      assert.match(result.stderr, /nothing was restored\n$/);
      const listed = await runCli(['export', '--format', 'ndjson'], { env: { DATABASE_URL: db } });
      assert.equal(listed.stdout, '');
    });
  }
  it('refuses an idempotency key the service would not take, given twice, or for an id not yet given', async () => {
    const key = (k: string, userId = 1) => ['k', k, 'a'.repeat(64), userId, 1000];
    for (const [name, keys, reason] of [
      ['nul-key', [key('a\u0000b')], /line 3: key "a\\u0000b" is not an Idempotency-Key/],
      ['twice-key', [key('k1'), key('k1')], /line 4: key "k1" is there twice/],
      ['ahead-key', [key('k1', 10)], /line 3: userId 10 is not a whole number from 1 to 9/],
      ['short-fingerprint', [['k', 'k1', 'abc', 1, 1000]], /line 3: fingerprint is not a SHA-256/],
      // Found by the fourth outside run: a key from the year 9999 would never expire.
      [
        'future-key',
        [['k', 'k1', 'a'.repeat(64), 1, 253_402_300_799_999]],
        /line 3: createdAt 253402300799999 is not a whole number from 0 to \d+ \(a key is remembered for a day from its creation; up to 24 h ahead/,
      ],
    ] as const) {
      const head = JSON.stringify({
        format: 'user-records-backup',
        formatVersion: 1,
        changeVersion: 3,
        lastId: 9,
        takenAt: '2026-11-23T00:00:00.000Z',
      });
      const lines = [head, JSON.stringify(['r', ...good]), ...keys.map((k) => JSON.stringify(k))];
      const body = lines.map((line) => `${line}\n`).join('');
      const sha256 = createHash('sha256').update(body).digest('hex');
      const file = join(folder.dir, `${name}.backup`);
      writeFileSync(file, `${body}${JSON.stringify({ end: { records: 1, keys: keys.length, sha256 } })}\n`);
      const result = await runCli(['restore', file], { env: { DATABASE_URL: join(folder.dir, `${name}.db`) } });
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, reason);
    }
  });

  // A service whose clock is behind a restored record's creation keeps its update time at the
  // creation time (write-rules.ts), so its own backups hold no update before a creation.
  it('restores the same backup made well, at the very ends the service keeps (so the refusals above are of the faults alone)', async () => {
    const top = 999_999_999_999_999;
    const records = [good, [top, 'Ben', 41, 'Leeds', 253_402_300_799_999, 253_402_300_799_999, 2_147_483_647]];
    const file = forge('good', records, { lastId: top, changeVersion: top });
    const db = join(folder.dir, 'good.db');
    const result = await runCli(['restore', file], { env: { DATABASE_URL: db } });
    assert.equal(result.code, 0, result.stderr);
    // A key a day minus a minute ahead of this machine's clock is taken for a difference of clocks.
    const ahead = Date.now() + KEY_CLOCK_SKEW_MS - 60_000;
    const keyed = forge('ahead-key', [good], {}, [['k1', 'a'.repeat(64), 1, ahead]]);
    const restored = await runCli(['restore', keyed, '--replace'], { env: { DATABASE_URL: db } });
    assert.equal(restored.code, 0, restored.stderr);
  });
});

for (const backend of BACKENDS) {
  describe(`restore --replace while the service runs [${backend.name}]`, { skip: backend.skip }, () => {
    const folder = tempDir('user-records-cli-live-restore-');
    after(folder.cleanup);

    it('the service answers the restored listing at once, with no write needed to notice it', async () => {
      const database = await backend.fresh();
      const server = await startServer({ DATABASE_URL: database.url, RATE_LIMIT: 'off' });
      try {
        const post = (name: string) => fetch(`${server.url}/users?name=${name}&age=30&city=Oslo`, { method: 'POST' });
        assert.equal((await post('Ada')).status, 200);
        const atBackup = await fetch(`${server.url}/users`);
        const backupBody = await atBackup.text();
        const file = join(folder.dir, `${backend.name}.backup`);
        const backup = await runCli(['backup', file, '--quiet'], { env: { DATABASE_URL: database.url } });
        assert.equal(backup.code, 0, backup.stderr);
        for (const name of ['Ben', 'Cy', 'Dee']) assert.equal((await post(name)).status, 200);
        // Read twice: the service now keeps this listing in memory.
        await (await fetch(`${server.url}/users`)).text();
        assert.match(await (await fetch(`${server.url}/users`)).text(), /Dee/);

        const restore = await runCli(['restore', file, '--replace', '--quiet'], {
          env: { DATABASE_URL: database.url },
        });
        assert.equal(restore.code, 0, restore.stderr);
        const after = await fetch(`${server.url}/users`);
        assert.equal(await after.text(), backupBody, 'the listing kept from before the restore was served');
        // The same bytes under a new tag: the restore began a new history (see test/users/restore-etags.test.ts).
        assert.notEqual(after.headers.get('etag'), atBackup.headers.get('etag'));
      } finally {
        await server.stop();
        await database.drop();
      }
    });
  });
}

describe('signals while a command commits', () => {
  it('wait for the commit, which the command then reports, whatever opened before', () => {
    // The module alone, in a process of its own: hold, take a SIGINT, release as stored.
    const script = `
      import { holdSignals, releaseSignals } from './src/cli/signals.ts';
      holdSignals();
      process.kill(process.pid, 'SIGINT');
      setTimeout(async () => { console.log(await releaseSignals(true)); }, 200);
    `;
    const held = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(held.status, 0, held.stderr);
    assert.match(held.stdout, /SIGINT came while the data was being committed; it was stored/);
    // Not stored: the signal then ends the process as it would have.
    const ended = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script.replace('releaseSignals(true)', 'releaseSignals(false)')],
      { cwd: new URL('../..', import.meta.url).pathname, encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(ended.signal, 'SIGINT', `${ended.status} ${ended.stderr}`);
  });

  it('a signal that came before the commit began but reached the command during it waits too', () => {
    // The signal arrives while the command's code runs without a pause (as a large import's last
    // batch and commit do): its handler can only run once the event loop turns, after the commit.
    // The command must then report it as having come while committing, and exit 0.
    const script = `
      import { holdSignals, onInterrupt, releaseSignals } from './src/cli/signals.ts';
      onInterrupt(() => {});
      process.kill(process.pid, 'SIGTERM');
      holdSignals();
      console.log(await releaseSignals(true));
    `;
    const held = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(held.status, 0, `${held.signal} ${held.stderr}`);
    assert.match(held.stdout, /SIGTERM came while the data was being committed; it was stored/);
  });

  it('an import that said it stored its records exits 0, whatever signal comes as it ends', async () => {
    // The signal comes once the command has reported: while it closes the database and the process
    // winds down. A command that said it stored its data must not then end by the signal (a script
    // would import it again). Each run either catches that moment or comes too late; none may fail.
    const folder = tempDir('user-records-late-signal-');
    try {
      const input = join(folder.dir, 'people.csv');
      writeFileSync(
        input,
        `name,age,city\n${Array.from({ length: 30_000 }, (_, i) => `N${i},${i % 151},C\n`).join('')}`,
      );
      // From the report on, at steps of 10 ms: the process winds down for tens of ms after a large import.
      for (let run = 0; run < 8; run++) {
        const db = join(folder.dir, `late-${run}.db`);
        const signal = run % 2 === 0 ? 'SIGTERM' : 'SIGINT';
        const result = await runCli(['import', input, '--quiet'], {
          env: { DATABASE_URL: db },
          onStart: (child) => child.stdout?.once('data', () => setTimeout(() => child.kill(signal), run * 10)),
        });
        assert.match(result.stdout, /^imported 30000 records/);
        assert.equal(result.code, 0, `run ${run}: ${result.code} ${result.stderr}`);
      }
    } finally {
      folder.cleanup();
    }
  });

  it('once the data is stored, a later signal does not end the command with a failure', () => {
    const script = `
      import { holdSignals, releaseSignals } from './src/cli/signals.ts';
      holdSignals();
      console.log(String(await releaseSignals(true)));
      process.kill(process.pid, 'SIGTERM');
      setTimeout(() => console.log('reported and exited'), 200);
    `;
    const done = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(done.status, 0, `${done.signal} ${done.stderr}`);
    assert.equal(done.stdout, 'undefined\nreported and exited\n');
  });
});

for (const backend of BACKENDS) {
  describe(`an output that cannot be written [${backend.name}]`, { skip: backend.skip }, () => {
    const folder = tempDir('user-records-cli-nowhere-');
    after(folder.cleanup);
    it('is said at once, naming the file given, and the command ends', async () => {
      const database = await backend.fresh();
      try {
        for (const command of ['export', 'backup']) {
          const target = join(folder.dir, 'no-such-folder', `out.${command}`);
          const result = await runCli([command, target], { env: { DATABASE_URL: database.url }, timeoutMs: 20_000 });
          assert.equal(result.code, 1, `${command}: ${result.code} ${result.stderr}`);
          assert.equal(result.stderr, `user-records: cannot write ${target}: its folder does not exist (ENOENT)\n`);
        }
      } finally {
        await database.drop();
      }
    });
  });
}
