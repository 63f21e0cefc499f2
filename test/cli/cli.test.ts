import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { COMMANDS } from '../../src/cli/commands.ts';
import { csvLine } from '../../src/record/csv.ts';
import { BACKENDS, type Backend, databases } from '../helpers/backends.ts';
import { BIN, PACKAGE_BIN, runCli } from '../helpers/cli.ts';
import { docExamples } from '../helpers/doc-examples.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string; bin: Record<string, string> };

describe('user-records: help, version, usage', () => {
  it('is the package bin', () => {
    assert.equal(pkg.bin['user-records'], 'bin/user-records.mjs');
  });

  it('--help lists every command, each with its own --help naming its flags and settings', async () => {
    const main = await runCli(['--help']);
    assert.equal(main.code, 0);
    for (const command of COMMANDS) {
      assert.match(main.stdout, new RegExp(`^  ${command.name}\\b`, 'm'));
      const own = await runCli([command.name, '--help']);
      assert.equal(own.code, 0, own.stderr);
      assert.match(own.stdout, new RegExp(`^Usage: user-records ${command.name}`));
      for (const option of command.options)
        assert.ok(own.stdout.includes(`--${option.flag}`), `${command.name} --${option.flag}`);
      assert.ok(own.stdout.includes('--database-url (DATABASE_URL), default: ./data/users.db'));
      // The other ways people ask for it give the same page.
      for (const asked of [
        [command.name, '-h'],
        ['help', command.name],
      ]) {
        const same = await runCli(asked);
        assert.deepEqual([same.code, same.stdout], [0, own.stdout], asked.join(' '));
      }
    }
  });

  it('--version is the package version, from the package bin as npx runs it and from the bundle', async () => {
    const result = await runCli(['--version']);
    assert.deepEqual([result.code, result.stdout], [0, `${pkg.version}\n`]);
    const bin = execFileSync(process.execPath, [PACKAGE_BIN, '--version'], { encoding: 'utf8' });
    assert.equal(bin, `${pkg.version}\n`);
  });

  const usage: Array<{ name: string; args: string[]; message: RegExp }> = [
    { name: 'an unknown command', args: ['frobnicate'], message: /unknown command "frobnicate"/ },
    {
      name: 'an unknown flag',
      args: ['export', '--colour', 'red'],
      message: /^user-records: Unknown option '--colour' \(see user-records export --help\)\n$/,
    },
    {
      name: 'an unknown flag of serve',
      args: ['serve', '--nope'],
      message: /^user-records: Unknown option '--nope' \(see user-records serve --help\)\n$/,
    },
    {
      name: 'an unknown flag of the default command, serve',
      args: ['--nope', '1'],
      message: /^user-records: Unknown option '--nope' \(see user-records serve --help\)\n$/,
    },
    { name: 'a missing file', args: ['import'], message: /takes FILE\|-, got none/ },
    { name: 'a format it cannot guess', args: ['import', '-'], message: /--format csv\|json\|ndjson/ },
    { name: 'a bad format', args: ['export', '--format', 'xml'], message: /--format must be one of csv, json, ndjson/ },
    { name: 'a bad filter', args: ['export', '--age', 'old'], message: /--age must be a whole number from 0 to 150/ },
    { name: 'a bad setting', args: ['check', '--database-timeout-ms', 'soon'], message: /DATABASE_TIMEOUT_MS must be/ },
  ];
  for (const { name, args, message } of usage) {
    it(`exits 2 on ${name}, with the reason in one line`, async () => {
      const result = await runCli(args, { env: { DATABASE_URL: ':memory:' } });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
    });
  }
});

const listing = async (url: string) =>
  (
    await runCli(['export', '--format', 'ndjson', '--fields', 'id,name,age,city', '--quiet'], {
      env: { DATABASE_URL: url },
    })
  ).stdout;

interface ImportCase {
  name: string;
  file: string;
  content: string | Buffer;
  /** The records stored, as ndjson of id,name,age,city; none: nothing stored and exit 1. */
  stored?: string;
  /** What standard error must hold. */
  errors?: RegExp[];
}

const CSV_BOM = '\uFEFF';
const IMPORTS: ImportCase[] = [
  {
    name: 'quotes, commas inside quotes, BOM, CRLF, empty lines, a header in another order, unicode',
    file: 'people.csv',
    content: `${CSV_BOM}city,age,name\r\n"Paris, France",30,"Alice ""Al"" Smith"\r\n\r\nZürich,041,Chloé 李\r\n  \r\nOslo,0,"  Dan  "\r\n`,
    stored: [
      '{"id":1,"name":"Alice \\"Al\\" Smith","age":"30","city":"Paris, France"}',
      '{"id":2,"name":"Chloé 李","age":"41","city":"Zürich"}',
      '{"id":3,"name":"Dan","age":"0","city":"Oslo"}',
    ].join('\n'),
  },
  {
    name: 'a line break inside quotes (read as one field, then refused by the rules of the API)',
    file: 'breaks.csv',
    content: 'name,age,city\nAna,1,Rome\n"Bo\nB",2,Oslo\n',
    errors: [/breaks\.csv line 3: name must be text of 1 to 200 characters/, /1 of 2 rows are bad; nothing was stored/],
  },
  {
    name: 'a bad row among good ones (an age of 151)',
    file: 'bad.csv',
    content: 'name,age,city\nAna,1,Rome\nBo,151,Oslo\nCy,2,\n',
    errors: [
      /bad\.csv line 3: age must be a whole number from 0 to 150/,
      /bad\.csv line 4: city must not be empty or blank/,
    ],
  },
  {
    name: 'an unknown and a missing column',
    file: 'columns.csv',
    content: 'name,age,town\nAna,1,Rome\n',
    errors: [/columns\.csv line 1: header: unknown columns: town; missing columns: city/],
  },
  {
    name: 'a malformed quote',
    file: 'quote.csv',
    content: 'name,age,city\nAna,1,Rome\n"Bo"x,2,Oslo\n',
    errors: [/quote\.csv line 3: is not valid CSV: Invalid Closing Quote/],
  },
  {
    name: 'invalid UTF-8',
    file: 'latin1.csv',
    content: Buffer.concat([
      Buffer.from('name,age,city\nAna,1,Rome\nJos'),
      Buffer.from([0xe9]),
      Buffer.from(',2,Oslo\n'),
    ]),
    errors: [/latin1\.csv line 3: is not valid UTF-8; nothing was stored/],
  },
  {
    // PostgreSQL reads the records as COPY text, where a backslash starts an escape (\N a null, \. the end).
    name: 'backslashes, kept as they are',
    file: 'backslash.csv',
    content:
      String.raw`name,age,city
\N,1,C:\new\table
\.,2,a\\b\t` + '\n',
    stored: [
      String.raw`{"id":1,"name":"\\N","age":"1","city":"C:\\new\\table"}`,
      String.raw`{"id":2,"name":"\\.","age":"2","city":"a\\\\b\\t"}`,
    ].join('\n'),
  },
  {
    name: 'JSON as GET /users answers it, age as string or number',
    file: 'people.json',
    content: '{"data":[{"name":"Ana","age":"1","city":"Rome"},\n {"city":"Oslo","age":2,"name":"Bo"}]}',
    stored: '{"id":1,"name":"Ana","age":"1","city":"Rome"}\n{"id":2,"name":"Bo","age":"2","city":"Oslo"}',
  },
  {
    name: 'a bare JSON array with a bad element and an unknown field',
    file: 'bare.json',
    content: '[{"name":"Ana","age":"1","city":"Rome"},\n7,\n{"name":"Bo","age":2,"city":"Oslo","zip":"0150"}]',
    errors: [/bare\.json line 2: row is not a JSON object/, /bare\.json line 3: zip is not a field of a record/],
  },
  {
    name: 'NDJSON with an empty line',
    file: 'people.ndjson',
    content: '{"name":"Ana","age":1,"city":"Rome"}\n\n{"name":"Bo","age":"2","city":"Oslo"}\n',
    stored: '{"id":1,"name":"Ana","age":"1","city":"Rome"}\n{"id":2,"name":"Bo","age":"2","city":"Oslo"}',
  },
];

// A command that only reads, pointed at a file that is not there (a mistyped DATABASE_URL) or
// empty, must say so and fail, not make an empty database and report an empty backup as done.
describe('backup, export and check refuse a database file that is missing or empty', () => {
  const folder = tempDir('user-records-cli-missing-');
  after(folder.cleanup);
  for (const [command, args] of [
    ['backup', ['backup', 'out.bak']],
    ['export', ['export', 'out.csv']],
    ['check', ['check']],
  ] as const) {
    it(`${command}: exit 1, the path named, no file made`, async () => {
      const missing = join(folder.dir, `mistyped-${command}`, 'users.db');
      const gone = await runCli([...args], { env: { DATABASE_URL: missing }, cwd: folder.dir });
      assert.equal(gone.code, 1, gone.stderr);
      assert.equal(
        gone.stderr,
        `user-records: no database file at ${missing} (DATABASE_URL); serve, import, restore and migrate make one, this command only reads\n`,
      );
      assert.equal(existsSync(missing), false, 'the database file was made');
      assert.equal(existsSync(join(folder.dir, args[1] ?? 'none')), false, 'an output was left');
      const empty = join(folder.dir, `empty-${command}.db`);
      writeFileSync(empty, '');
      const zero = await runCli([...args], { env: { DATABASE_URL: empty }, cwd: folder.dir });
      assert.equal(zero.code, 1, zero.stderr);
      assert.match(zero.stderr, /is empty: no database has been written to it/);
      assert.equal(readFileSync(empty).length, 0, 'the empty file was written');
      // A valid SQLite file that holds no table yet is as empty.
      const blank = join(folder.dir, `blank-${command}.db`);
      execFileSync(process.execPath, [
        '-e',
        `const D = require('better-sqlite3'); const d = new D(${JSON.stringify(blank)}); d.exec('CREATE TABLE t (x); DROP TABLE t'); d.close();`,
      ]);
      const size = readFileSync(blank).length;
      const noTables = await runCli([...args], { env: { DATABASE_URL: blank }, cwd: folder.dir });
      assert.equal(noTables.code, 1, noTables.stderr);
      assert.match(noTables.stderr, /is empty: no database has been written to it/);
      assert.equal(readFileSync(blank).length, size, 'the blank file was written');
    });
  }
});

// OWASP, CSV injection: a cell that starts with = + - @, a tab or a carriage return is a formula
// to a spreadsheet; by default an export writes it with a leading single quote, and quotes a cell
// with a semicolon or a tab, where a spreadsheet of another locale would split it into a new cell.
describe('the CSV writer: formulas made inert by default, values as stored when raw', () => {
  const CELLS: ReadonlyArray<[value: string, inert: string, raw: string]> = [
    ['Plain', 'Plain', 'Plain'],
    ['=1+2', "'=1+2", '=1+2'],
    [
      '=HYPERLINK("http://evil.example","x")',
      '"\'=HYPERLINK(""http://evil.example"",""x"")"',
      '"=HYPERLINK(""http://evil.example"",""x"")"',
    ],
    ['+1', "'+1", '+1'],
    ["-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0"],
    ['@SUM(A1)', "'@SUM(A1)", '@SUM(A1)'],
    ['\t=1', '"\'\t=1"', '\t=1'],
    ['\r=1', '"\'\r=1"', '"\r=1"'],
    ['a;=1+2', '"a;=1+2"', 'a;=1+2'],
    ['a\t=1+2', '"a\t=1+2"', 'a\t=1+2'],
    ["'=1+2", "'=1+2", "'=1+2"],
    ['a=1', 'a=1', 'a=1'],
    ['2026-01-02T03:04:05.006Z', '2026-01-02T03:04:05.006Z', '2026-01-02T03:04:05.006Z'],
  ];
  for (const [value, inert, raw] of CELLS) {
    it(JSON.stringify(value), () => {
      assert.equal(csvLine([value, '30']), `${inert},30\r\n`);
      assert.equal(csvLine([value, '30'], { raw: true }), `${raw},30\r\n`);
    });
  }
});

for (const backend of BACKENDS) {
  describe(`user-records import and export [${backend.name}]`, { skip: backend.skip }, () => {
    const fresh = databases(backend);
    const files = tempDir('user-records-cli-');
    after(files.cleanup);

    for (const example of IMPORTS) {
      it(`import: ${example.name}`, async () => {
        const { url } = await fresh();
        const path = join(files.dir, example.file);
        writeFileSync(path, example.content);
        const result = await runCli(['import', path], { env: { DATABASE_URL: url } });
        for (const pattern of example.errors ?? []) assert.match(result.stderr, pattern);
        if (example.stored === undefined) {
          assert.equal(result.code, 1, result.stderr);
          assert.equal(await listing(url), '', 'nothing is stored');
        } else {
          assert.equal(result.code, 0, result.stderr);
          assert.equal((await listing(url)).trimEnd(), example.stored);
        }
      });
    }

    for (const [format, content, rejects] of [
      ['csv', 'city,name,age\nRome,Ana,1\nOslo,Bo,151\n"A, B",Cy,2\n', 'city,name,age\r\nOslo,Bo,151\r\n'],
      [
        'json',
        '[{"name":"Ana","age":1,"city":"Rome"},{"name":"","age":1,"city":"X"},{"name":"Cy","age":2,"city":"A, B"}]',
        '{"data":[\n{"name":"","age":1,"city":"X"}\n]}\n',
      ],
      ['ndjson', '{"name":"Ana","age":1,"city":"Rome"}\n[1]\n{"name":"Cy","age":2,"city":"A, B"}\n', '[1]\n'],
    ] as const) {
      it(`--skip-invalid stores the good rows and writes the bad ones as ${format}`, async () => {
        const { url } = await fresh();
        const path = join(files.dir, `skip.${format}`);
        writeFileSync(path, content);
        const result = await runCli(['import', path, '--skip-invalid'], { env: { DATABASE_URL: url } });
        assert.equal(result.code, 0, result.stderr);
        assert.match(
          result.stdout,
          new RegExp(
            `imported 2 records \\(ids 1 to 2\\); 1 bad rows skipped, written to .*skip\\.${format}\\.rejects\\.${format}`,
          ),
        );
        assert.equal(readFileSync(`${path}.rejects.${format}`, 'utf8'), rejects);
        assert.equal(
          await listing(url),
          '{"id":1,"name":"Ana","age":"1","city":"Rome"}\n{"id":2,"name":"Cy","age":"2","city":"A, B"}\n',
        );
      });
    }

    it('reads standard input, and lists at most --max-errors bad rows', async () => {
      const { url } = await fresh();
      const bad = Array.from({ length: 5 }, (_, i) => `{"name":"N${i}","age":200,"city":"C"}`).join('\n');
      const result = await runCli(['import', '-', '--format', 'ndjson', '--max-errors', '2'], {
        env: { DATABASE_URL: url },
        input: bad,
      });
      assert.equal(result.code, 1);
      assert.equal(result.stderr.match(/standard input line \d+: age/g)?.length, 2);
      assert.match(result.stderr, /and 3 more bad rows/);
    });

    it('CSV export: formulas get a leading quote (said on standard error), --raw writes them as stored', async () => {
      const { url } = await fresh();
      const names = ['=HYPERLINK("http://evil.example","x")', '+1', '@SUM(A1)', 'Ann'];
      const input = names.map((name, i) => JSON.stringify({ name, age: i, city: i === 0 ? '-Oslo' : 'Oslo' }));
      const seeded = await runCli(['import', '-', '--format', 'ndjson', '--quiet'], {
        env: { DATABASE_URL: url },
        input: input.join('\n'),
      });
      assert.equal(seeded.code, 0, seeded.stderr);
      const safe = await runCli(['export', '--format', 'csv', '--quiet'], { env: { DATABASE_URL: url } });
      assert.equal(safe.code, 0, safe.stderr);
      assert.equal(
        safe.stdout,
        'name,age,city\r\n"\'=HYPERLINK(""http://evil.example"",""x"")",0,\'-Oslo\r\n\'+1,1,Oslo\r\n\'@SUM(A1),2,Oslo\r\nAnn,3,Oslo\r\n',
      );
      assert.match(safe.stderr, /4 values that start like a spreadsheet formula .* leading ' .*--raw/);
      const raw = await runCli(['export', '--format', 'csv', '--raw', '--quiet'], { env: { DATABASE_URL: url } });
      assert.equal(raw.code, 0, raw.stderr);
      assert.equal(
        raw.stdout,
        'name,age,city\r\n"=HYPERLINK(""http://evil.example"",""x"")",0,-Oslo\r\n+1,1,Oslo\r\n@SUM(A1),2,Oslo\r\nAnn,3,Oslo\r\n',
      );
      assert.equal(raw.stderr, '');
      const json = await runCli(['export', '--raw', '--quiet'], { env: { DATABASE_URL: url } });
      assert.equal(json.code, 2);
      assert.match(json.stderr, /--raw applies to --format csv only/);

      // An import stores what the file holds: the raw file gives the records back exactly, the
      // default one keeps the quote it added (the reader of a spreadsheet saw it too).
      for (const [file, expected] of [
        [raw.stdout, names],
        [safe.stdout, names.map((name) => (name === 'Ann' ? name : `'${name}`))],
      ] as const) {
        const target = await fresh();
        const imported = await runCli(['import', '-', '--format', 'csv', '--quiet'], {
          env: { DATABASE_URL: target.url },
          input: file,
        });
        assert.equal(imported.code, 0, imported.stderr);
        const stored = (await listing(target.url))
          .trimEnd()
          .split('\n')
          .map((line) => (JSON.parse(line) as { name: string }).name);
        assert.deepEqual(stored, expected);
      }
    });

    describe('export against the running service', () => {
      let server: RunningServer | undefined;
      let url = '';
      before(async () => {
        url = (await fresh()).url;
        const path = join(files.dir, 'seed.csv');
        const rows = Array.from({ length: 2500 }, (_, i) => `"Name ${i}, the ${i % 7}th",${i % 151},City${i % 13}`);
        writeFileSync(path, `name,age,city\n${rows.join('\n')}\n`);
        const imported = await runCli(['import', path, '--quiet'], { env: { DATABASE_URL: url } });
        assert.equal(imported.code, 0, imported.stderr);
        server = await startServer({ DATABASE_URL: url });
      });
      after(async () => {
        await server?.stop();
      });

      for (const query of [
        '',
        'fields=id,name,age,city,createdAt,updatedAt',
        'city=City3&fields=id,name,createdAt',
        'sort=-age,name&age.gte=100',
        'q=the 3th',
      ]) {
        it(`--format json is byte for byte GET /users${query === '' ? '' : `?${query}`}`, async () => {
          const flags = [...new URLSearchParams(query)].map(([name, value]) => `--${name}=${value}`);
          const exported = await runCli(['export', '--quiet', ...flags], { env: { DATABASE_URL: url } });
          assert.equal(exported.code, 0, exported.stderr);
          const answer = await fetch(`${server?.url}/users${query === '' ? '' : `?${query}`}`);
          assert.equal(answer.status, 200);
          const body = await answer.text();
          assert.ok(body.length > 20);
          assert.equal(exported.stdout, body);
        });
      }

      it('export → import round trip in each format gives the same listing', async () => {
        const original = await (await fetch(`${server?.url}/users`)).text();
        for (const format of ['csv', 'json', 'ndjson']) {
          const file = join(files.dir, `round.${format}`);
          const exported = await runCli(['export', file, '--quiet'], { env: { DATABASE_URL: url } });
          assert.equal(exported.code, 0, exported.stderr);
          const target = await fresh();
          const imported = await runCli(['import', file, '--quiet'], { env: { DATABASE_URL: target.url } });
          assert.equal(imported.code, 0, imported.stderr);
          const again = await runCli(['export', '--quiet'], { env: { DATABASE_URL: target.url } });
          assert.equal(again.stdout, original, format);
        }
      });
    });

    it('SIGKILL during an import leaves all of it or nothing', async () => {
      const { url } = await fresh();
      const path = join(files.dir, 'big.csv');
      const rows = 300_000;
      writeFileSync(
        path,
        `name,age,city\n${Array.from({ length: rows }, (_, i) => `N${i},${i % 151},C`).join('\n')}\n`,
      );
      let killed = false;
      const result = await runCli(['import', path], {
        env: { DATABASE_URL: url },
        onStart: (child) => {
          // The first progress line means rows are being stored: kill it then.
          child.stderr?.on('data', () => {
            if (!killed) killed = child.kill('SIGKILL');
          });
        },
      });
      const stored = (await listing(url)).split('\n').filter((line) => line !== '').length;
      assert.ok(stored === 0 || stored === rows, `${stored} records stored (code ${result.code})`);
      if (result.code === 'SIGKILL') assert.equal(stored, 0, 'killed before it said done');
      const check = await runCli(['check'], { env: { DATABASE_URL: url } });
      assert.equal(check.code, 0, check.stderr);
    });

    it('migrate shows the schema version; check counts the records; each names its phases, none with --quiet', async () => {
      const { url } = await fresh();
      const migrate = await runCli(['migrate'], { env: { DATABASE_URL: url } });
      assert.equal(migrate.code, 0, migrate.stderr);
      assert.match(migrate.stdout, /^schema version \d+ \((sqlite|postgresql)\): up to date\n$/);
      assert.match(migrate.stderr, /^migrate: bringing the schema up to date \(\d+\.\ds\)\n$/);
      await runCli(['import', '-', '--format', 'ndjson'], {
        env: { DATABASE_URL: url },
        input: '{"name":"A","age":1,"city":"B"}',
      });
      const check = await runCli(['check'], { env: { DATABASE_URL: url } });
      assert.equal(check.code, 0, check.stderr);
      assert.match(check.stdout, /^ok: 1 records, 0 idempotency keys/);
      assert.match(check.stderr, /^check: opening the database \(\d+\.\ds\)\ncheck: checking \(\d+\.\ds\)\n$/);
      for (const [command, out] of [
        ['migrate', migrate.stdout],
        ['check', check.stdout],
      ] as const) {
        const quiet = await runCli([command, '--quiet'], { env: { DATABASE_URL: url } });
        assert.deepEqual(quiet, { code: 0, stdout: out, stderr: '' });
      }
    });
  });
}

const postgres = BACKENDS.find((backend) => backend.name === 'postgresql') as Backend;

describe('import into an empty PostgreSQL table (COPY, indexes made at the end)', { skip: postgres.skip }, () => {
  const fresh = databases(postgres);

  /** Runs `work` with a connection of its own to the database at `url`. */
  async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  const indexes = async (client: pg.Client) =>
    (
      await client.query<{ indexdef: string }>(
        `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'users' ORDER BY indexname`,
      )
    ).rows.map((row) => row.indexdef);

  it('SIGKILL in the middle of the COPY leaves nothing, and every index in place', async () => {
    const { url } = await fresh();
    assert.equal((await runCli(['migrate'], { env: { DATABASE_URL: url } })).code, 0);
    await withClient(url, async (client) => {
      const before = await indexes(client);
      assert.ok(before.length >= 6, before.join('\n'));
      const child = spawn(process.execPath, [BIN, 'import', '-', '--format', 'csv', '--quiet'], {
        env: { ...process.env, DATABASE_URL: url },
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      child.stdin.on('error', () => undefined);
      const closed = once(child, 'close');
      child.stdin.write('name,age,city\n');
      // Rows a few thousand at a time, until the server shows the COPY storing them.
      let copied = 0;
      for (let i = 0; copied === 0 && i < 400; i++) {
        child.stdin.write(Array.from({ length: 2000 }, (_, j) => `N${i}-${j},${j % 151},C\n`).join(''));
        await new Promise((resolve) => setTimeout(resolve, 50));
        const { rows } = await client.query<{ n: string }>(
          `SELECT coalesce(max(tuples_processed), 0) AS n FROM pg_stat_progress_copy WHERE relid = 'users'::regclass`,
        );
        copied = Number(rows[0]?.n);
      }
      assert.ok(copied > 0, 'the COPY was under way');
      child.kill('SIGKILL');
      await closed;
      // The server rolls back once it sees the connection gone; a read waits for that.
      assert.equal((await client.query('SELECT count(*)::int AS n FROM users')).rows[0]?.n, 0);
      assert.deepEqual(await indexes(client), before);
    });
    const check = await runCli(['check'], { env: { DATABASE_URL: url } });
    assert.equal(check.code, 0, check.stderr);
    const again = await runCli(['import', '-', '--format', 'csv'], {
      env: { DATABASE_URL: url },
      input: 'name,age,city\nAna,1,Rome\n',
    });
    assert.equal(again.code, 0, again.stderr);
    assert.match(await listing(url), /^\{"id":\d+,"name":"Ana","age":"1","city":"Rome"\}\n$/);
  });

  it('a reader holding the table: the import waits a moment for it, then keeps the indexes in place', async () => {
    const { url } = await fresh();
    assert.equal((await runCli(['migrate'], { env: { DATABASE_URL: url } })).code, 0);
    await withClient(url, async (reader) => {
      const before = await indexes(reader);
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM users');
      const result = await runCli(['import', '-', '--format', 'csv'], {
        env: { DATABASE_URL: url },
        input: 'name,age,city\nAna,1,Rome\nBo,2,Oslo\n',
        timeoutMs: 20_000,
      });
      await reader.query('COMMIT');
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(await indexes(reader), before);
    });
    assert.equal(
      await listing(url),
      '{"id":1,"name":"Ana","age":"1","city":"Rome"}\n{"id":2,"name":"Bo","age":"2","city":"Oslo"}\n',
    );
    const check = await runCli(['check'], { env: { DATABASE_URL: url } });
    assert.equal(check.code, 0, check.stderr);
  });
});

/** Adds records through the API from 20 writers (some with Idempotency-Keys), until stopped. */
function writers(base: string, count: number): { stop(): Promise<number> } {
  let running = true;
  let written = 0;
  const one = async (writer: number) => {
    for (let i = 0; running && i < 10_000; i++) {
      const headers: Record<string, string> = i % 3 === 0 ? { 'idempotency-key': `w${writer}-${i}` } : {};
      const answer = await fetch(`${base}/users?name=W${writer}-${i}&age=${i % 151}&city=Writers`, {
        method: 'POST',
        headers,
      });
      await answer.arrayBuffer();
      if (answer.status === 200) written++;
    }
  };
  const all = Promise.all(Array.from({ length: count }, (_, writer) => one(writer)));
  return {
    stop: async () => {
      running = false;
      await all;
      return written;
    },
  };
}

const available = BACKENDS.filter((backend) => backend.skip === false);
for (const from of available) {
  for (const into of available) {
    describe(`backup on ${from.name} under 20 writers, restore into ${into.name}`, () => {
      const freshFrom = databases(from);
      const freshInto = databases(into);
      const files = tempDir('user-records-backup-');
      after(files.cleanup);

      it('restores exactly the moment of the backup: listing, change version, keys, ids after', async () => {
        const source = await freshFrom();
        const server = await startServer({ DATABASE_URL: source.url, RATE_LIMIT: 'off' });
        const file = join(files.dir, 'users.backup');
        let backup;
        try {
          const load = writers(server.url, 20);
          // Let writes begin before the backup.
          for (let i = 0; i < 100 && (await listing(source.url)) === ''; i++)
            await new Promise((r) => setTimeout(r, 20));
          backup = await runCli(['backup', file], { env: { DATABASE_URL: source.url } });
          await load.stop();
        } finally {
          await server.stop();
        }
        assert.equal(backup.code, 0, backup.stderr);
        const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
        const header = JSON.parse(lines[0] as string) as { changeVersion: number };
        const records = lines
          .filter((line) => line.startsWith('["r"'))
          .map((line) => JSON.parse(line) as [string, number, string, number, string]);
        assert.ok(records.length > 0, 'the backup holds records');
        // Only creates ran, one change each: a snapshot of one moment holds exactly as many records as its version.
        assert.equal(header.changeVersion, records.length);
        assert.ok(
          lines.some((line) => line.startsWith('["k"')),
          'the backup holds idempotency keys',
        );

        const target = await freshInto();
        const restored = await runCli(['restore', file], { env: { DATABASE_URL: target.url } });
        assert.equal(restored.code, 0, restored.stderr);
        const again = await runCli(['restore', file], { env: { DATABASE_URL: target.url } });
        assert.equal(again.code, 1);
        assert.match(again.stderr, /holds \d+ records; restore into an empty one, or pass --replace/);

        const served = await startServer({ DATABASE_URL: target.url });
        try {
          // The first listing after a start streams (weak ETag) while the service keeps a copy; the next is exact.
          await (await fetch(`${served.url}/users`)).arrayBuffer();
          // Uncompressed: a compressed answer's tag names its coding too (`-gzip`).
          const answer = await fetch(`${served.url}/users`, { headers: { 'accept-encoding': 'identity' } });
          const expected = `{"data":[${records.map(([, , name, age, city]) => `{"name":${JSON.stringify(name)},"age":"${age}","city":${JSON.stringify(city)}}`).join(',')}]}`;
          assert.equal(await answer.text(), expected);
          // The version of the backup, in the new history the restore began (a tag never names two contents).
          assert.match(answer.headers.get('etag') ?? '', new RegExp(`^"v${header.changeVersion}\\.[0-9a-f]{16}"$`));
          // A remembered key replays its record; a new record's id continues after the highest.
          const [key] = lines
            .filter((line) => line.startsWith('["k"'))
            .map((line) => JSON.parse(line) as [string, string, string, number]);
          const writer = /^w(\d+)-(\d+)$/.exec(key?.[1] ?? '');
          assert.ok(writer !== null);
          const replay = await fetch(
            `${served.url}/users?name=W${writer[1]}-${writer[2]}&age=${Number(writer[2]) % 151}&city=Writers`,
            {
              method: 'POST',
              headers: { 'idempotency-key': key?.[1] as string },
            },
          );
          assert.equal(replay.headers.get('idempotent-replayed'), 'true');
          assert.equal(replay.headers.get('location'), `/users/${key?.[3]}`);
          const created = await fetch(`${served.url}/users?name=New&age=1&city=After&fields=id`, { method: 'POST' });
          const { data } = (await created.json()) as { data: Array<{ id: number }> };
          assert.ok((data[0]?.id ?? 0) > Math.max(...records.map((record) => record[1])));
        } finally {
          await served.stop();
        }
        const replaced = await runCli(['restore', file, '--replace'], { env: { DATABASE_URL: target.url } });
        assert.equal(replaced.code, 0, replaced.stderr);
      });
    });
  }
}

describe('restore refuses a damaged backup, and stores nothing of it', () => {
  it('names the checksum; a file that is not a backup at all is refused before the database is opened', async () => {
    const files = tempDir();
    try {
      const db = join(files.dir, 'a.db');
      await runCli(['import', '-', '--format', 'ndjson', '--quiet'], {
        env: { DATABASE_URL: db },
        input: '{"name":"A","age":1,"city":"B"}',
      });
      const file = join(files.dir, 'b.backup');
      assert.equal((await runCli(['backup', file], { env: { DATABASE_URL: db } })).code, 0);
      writeFileSync(file, readFileSync(file, 'utf8').replace('"A"', '"Z"'));
      const target = join(files.dir, 'c.db');
      const result = await runCli(['restore', file], { env: { DATABASE_URL: target } });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /is damaged: its checksum does not match its content; nothing was restored/);
      const listed = await runCli(['export', '--format', 'ndjson'], { env: { DATABASE_URL: target } });
      assert.deepEqual([listed.code, listed.stdout], [0, '']);

      const csv = join(files.dir, 'people.csv');
      writeFileSync(csv, 'name,age,city\nAda,36,London\n');
      const other = join(files.dir, 'd.db');
      const notBackup = await runCli(['restore', csv], { env: { DATABASE_URL: other } });
      assert.equal(notBackup.code, 1);
      assert.match(notBackup.stderr, /people\.csv line 1: is not JSON/);
      assert.equal(existsSync(other), false, 'the database was opened');
    } finally {
      files.cleanup();
    }
  });
});

// docs/cli.md's examples, run exactly as written in an empty folder (npx user-records is the bin).
describe('docs/cli.md command-line examples', () => {
  const folder = tempDir('user-records-readme-');
  after(folder.cleanup);
  const examples = docExamples('docs/cli.md', 'cli-examples');

  it('show every command', () => {
    const commands = examples.map((example) => example.command).join('\n');
    for (const name of ['import', 'export', 'backup', 'restore', 'check', '--skip-invalid', '--format csv']) {
      assert.ok(commands.includes(name), `no example uses ${name}`);
    }
  });

  for (const [i, example] of examples.entries()) {
    it(`${i + 1}: ${example.command}`, () => {
      const command = example.command.replaceAll(
        'npx user-records',
        `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)}`,
      );
      const env = { ...process.env };
      delete env.DATABASE_URL;
      const output = execFileSync('bash', ['-c', command], { cwd: folder.dir, env, encoding: 'utf8', timeout: 30_000 });
      assert.equal(output.replace(/\r/g, '').trimEnd(), example.expected.trimEnd());
    });
  }
});
