import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  createWriteStream,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { RANGES } from '../../src/cli/backup-format.ts';
import { loadConfig } from '../../src/config/load.ts';
import { openDatabase } from '../../src/store/database.ts';
import { startApp } from '../helpers/app.ts';
import { BACKENDS, databases } from '../helpers/backends.ts';
import { BIN, runCli } from '../helpers/cli.ts';
import { scaled } from '../helpers/scale.ts';
import { tempDir } from '../helpers/server.ts';

// Found by the third outside run against the command line: a restore read its file twice (a file
// cut short between the two restored part of it and said it was done), and accepted backups that
// left a database the service could not go on with.

const available = BACKENDS.filter((backend) => backend.skip === false);

/**
 * What a database holds, read in this process through the commands' own snapshot (no process to
 * start): its change version, last id, every record with its version and times, every key.
 */
async function contents(url: string): Promise<string> {
  const bulk = await openDatabase(loadConfig({ DATABASE_URL: url }, [])).openBulk();
  try {
    const snapshot = await bulk.snapshot();
    const lines = [`${snapshot.version} ${snapshot.lastId}`];
    for await (const page of snapshot.records()) for (const record of page) lines.push(JSON.stringify(record));
    for await (const page of snapshot.keys()) for (const key of page) lines.push(JSON.stringify(key));
    await snapshot.end();
    return lines.join('\n');
  } finally {
    await bulk.close();
  }
}

/** Resolves once process `pid` has `file` open (or has ended), read from /proc. */
async function opened(pid: number, file: string): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    try {
      const fds = readdirSync(`/proc/${pid}/fd`);
      if (fds.some((fd) => readlinkOr(`/proc/${pid}/fd/${fd}`) === file)) return;
    } catch {
      return;
    }
    await sleep(5);
  }
}

const readlinkOr = (path: string) => {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
};

const ndjson = (count: number, name: string) =>
  Array.from({ length: count }, (_, i) => `{"name":"${name} ${i}","age":${i % 151},"city":"Town"}\n`).join('');

for (const backend of available) {
  describe(`a restore reads its backup once, and commits only what its end line vouches for [${backend.name}]`, () => {
    const fresh = databases(backend);
    const folder = tempDir('user-records-restore-cut-');
    after(folder.cleanup);
    const records = scaled(5_000, 1_000_000);
    let backup: Buffer;
    let full: string;
    /** A database holding three old records, and what it holds. */
    const withOldRecords = async () => {
      const database = await fresh();
      const imported = await runCli(['import', '-', '--format', 'ndjson', '--quiet'], {
        env: { DATABASE_URL: database.url },
        input: ndjson(3, 'Old'),
      });
      assert.equal(imported.code, 0, imported.stderr);
      return { url: database.url, old: await contents(database.url) };
    };

    before(async () => {
      const source = await fresh();
      const imported = await runCli(['import', '-', '--format', 'ndjson', '--quiet'], {
        env: { DATABASE_URL: source.url },
        input: ndjson(records, 'New'),
        timeoutMs: 300_000,
      });
      assert.equal(imported.code, 0, imported.stderr);
      const file = join(folder.dir, 'source.backup');
      const made = await runCli(['backup', file, '--quiet'], { env: { DATABASE_URL: source.url }, timeoutMs: 300_000 });
      assert.equal(made.code, 0, made.stderr);
      backup = readFileSync(file);
      full = await contents(source.url);
    });

    /** Byte offsets to cut the backup at, each with what the restore must say. */
    const cuts = () => {
      const lines: number[] = [];
      for (let i = backup.indexOf(10); i !== -1; i = backup.indexOf(10, i + 1)) lines.push(i + 1);
      const endLine = lines.at(-2) as number;
      const middle = lines[Math.floor(lines.length / 2)] as number;
      return [
        { name: 'nothing', at: 0, reason: /is empty/ },
        { name: 'inside the header', at: 20, reason: /line 1: is torn/ },
        { name: 'after the header', at: lines[0] as number, reason: /ends after its header/ },
        { name: 'inside a record in the middle', at: middle + 7, reason: /is torn/ },
        { name: 'after a record in the middle', at: middle, reason: /is not the end line .*cut short/ },
        { name: 'before the end line', at: endLine, reason: /is not the end line .*cut short/ },
        { name: 'inside the end line', at: endLine + 12, reason: /is torn/ },
      ];
    };

    it('from standard input cut at any point: exit 0 only with every record, else the database as it was', async () => {
      for (const replace of [true, false]) {
        const empty = async () => {
          const { url } = await fresh();
          return { url, old: await contents(url) };
        };
        const target = replace ? await withOldRecords() : await empty();
        const flags = replace ? ['--replace'] : [];
        // Into an empty database, a few of the cuts: the rest read the same way.
        for (const cut of cuts().filter((_, i) => replace || i % 3 === 1)) {
          const result = await runCli(['restore', '-', ...flags, '--quiet'], {
            env: { DATABASE_URL: target.url },
            input: backup.subarray(0, cut.at),
            timeoutMs: 300_000,
          });
          assert.equal(result.code, 1, `${cut.name}: ${result.stdout}${result.stderr}`);
          assert.match(result.stderr, cut.reason, cut.name);
          assert.match(result.stderr, /^user-records: standard input/, cut.name);
          assert.equal(await contents(target.url), target.old, `${cut.name}: the database changed`);
        }
        // The whole of it restores, and so does the whole but its last line break (nothing is missing).
        for (const end of [replace ? backup.length : backup.length - 1]) {
          const result = await runCli(['restore', '-', '--replace', '--quiet'], {
            env: { DATABASE_URL: target.url },
            input: backup.subarray(0, end),
            timeoutMs: 300_000,
          });
          assert.equal(result.code, 0, result.stderr);
          assert.equal(result.stdout, `restored ${records} records at change version ${records} from standard input\n`);
          assert.equal(await contents(target.url), full);
        }
      }
    });

    it('from a named pipe whose writer stops early, and from a file cut while it is read', async () => {
      const target = await withOldRecords();
      // A pipe: the restore has read all that was written, and waits for more, when the writer stops.
      const fifo = join(folder.dir, 'pipe.backup');
      execFileSync('mkfifo', [fifo]);
      for (const share of [0.5, 1]) {
        const running = runCli(['restore', fifo, '--replace', '--quiet'], {
          env: { DATABASE_URL: target.url },
          timeoutMs: 300_000,
        });
        const writer = createWriteStream(fifo);
        const end = Math.floor(backup.length * share);
        for (let at = 0; at < end; at += 64 * 1024) {
          if (!writer.write(backup.subarray(at, Math.min(end, at + 64 * 1024)))) await once(writer, 'drain');
        }
        writer.end();
        const result = await running;
        if (share < 1) {
          assert.equal(result.code, 1, result.stderr);
          assert.match(result.stderr, /is torn|is not the end line/);
          assert.equal(await contents(target.url), target.old);
        } else {
          assert.equal(result.code, 0, result.stderr);
          assert.equal(await contents(target.url), full);
        }
      }

      // A file cut to half its length at several moments after the restore opened it: whatever the
      // moment, the restore stores every record or none.
      const outcomes: string[] = [];
      for (const [i, delay] of [0, 50, 400].entries()) {
        const again = await withOldRecords();
        const file = join(folder.dir, `cut-${i}.backup`);
        writeFileSync(file, backup);
        const child = spawn(process.execPath, [BIN, 'restore', file, '--replace', '--quiet'], {
          env: { ...process.env, DATABASE_URL: again.url },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stderr = '';
        child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
        const closed = once(child, 'close') as Promise<[number | null]>;
        await Promise.race([opened(child.pid as number, file).then(() => sleep(delay)), closed]);
        truncateSync(file, Math.floor(backup.length / 2));
        const [code] = await closed;
        const now = await contents(again.url);
        if (code === 0) assert.equal(now, full, `exit 0 after the cut at ${delay} ms, without every record`);
        else {
          assert.equal(code, 1, stderr);
          assert.match(stderr, /is torn|is not the end line|checksum/);
          assert.equal(now, again.old, `the cut at ${delay} ms changed the database`);
        }
        outcomes.push(`${delay} ms: exit ${code}`);
        assert.equal(statSync(file).size, Math.floor(backup.length / 2));
      }
      process.stdout.write(`# file cut during its restore [${backend.name}]: ${outcomes.join(', ')}\n`);
    });
  });
}

/** The highest and lowest of each range, and the ones next to them, more often than the rest. */
const edgy = (min: number, max: number) =>
  fc.oneof(fc.constantFrom(min, min + 1, max - 1, max), fc.integer({ min, max }));

const PRINTABLE = fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code));
const HEX = fc.constantFrom(...'0123456789abcdef');

/** The latest key time a restore takes: its own clock (the skew it allows is left unused). */
const KEYS_UNTIL = Date.now();

/** A backup within every range a restore accepts, with a valid checksum. */
const backups = fc
  .record({
    ids: fc.uniqueArray(edgy(RANGES.id.min, RANGES.id.max), { minLength: 3, maxLength: 3 }),
    lastIdAtTop: fc.boolean(),
    changeVersion: edgy(RANGES.changeVersion.min, RANGES.changeVersion.max),
    fields: fc.array(
      fc.record({
        name: fc.constantFrom('Ada', 'Zoë', 'N'.repeat(200), '名前'),
        age: fc.constantFrom(0, 36, 150),
        city: fc.constantFrom('Oslo', 'São Paulo', 'C'.repeat(200)),
        times: fc.tuple(edgy(RANGES.time.min, RANGES.time.max), edgy(RANGES.time.min, RANGES.time.max)),
        version: edgy(RANGES.version.min, RANGES.version.max),
      }),
      { minLength: 3, maxLength: 3 },
    ),
    keys: fc.uniqueArray(
      fc.record({
        key: fc.string({ unit: PRINTABLE, minLength: 1, maxLength: 255 }),
        fingerprint: fc.string({ unit: HEX, minLength: 64, maxLength: 64 }),
        createdAt: edgy(RANGES.time.min, KEYS_UNTIL),
      }),
      { maxLength: 2, selector: (key) => key.key },
    ),
  })
  .map(({ ids, lastIdAtTop, changeVersion, fields, keys }) => {
    const sorted = [...ids].sort((a, b) => a - b);
    const lastId = lastIdAtTop ? RANGES.lastId.max : (sorted.at(-1) as number);
    const records = sorted.map((id, i) => {
      const { times, ...rest } = fields[i] as (typeof fields)[number];
      // Never updated before created: a restore refuses that.
      return { id, ...rest, createdAt: Math.min(...times), updatedAt: Math.max(...times) };
    });
    return {
      changeVersion,
      lastId,
      records,
      keys: keys.map((key, i) => ({ ...key, userId: sorted[i % sorted.length] as number })),
    };
  });
type Backup = typeof backups extends fc.Arbitrary<infer T> ? T : never;

function backupText(backup: Backup): string {
  const header = {
    format: 'user-records-backup',
    formatVersion: 1,
    changeVersion: backup.changeVersion,
    lastId: backup.lastId,
    takenAt: '2026-11-23T00:00:00.000Z',
  };
  const lines = [
    JSON.stringify(header),
    ...backup.records.map((r) =>
      JSON.stringify(['r', r.id, r.name, r.age, r.city, r.createdAt, r.updatedAt, r.version]),
    ),
    ...backup.keys.map((k) => JSON.stringify(['k', k.key, k.fingerprint, k.userId, k.createdAt])),
  ];
  const body = lines.map((line) => `${line}\n`).join('');
  const sha256 = createHash('sha256').update(body).digest('hex');
  return `${body}${JSON.stringify({ end: { records: backup.records.length, keys: backup.keys.length, sha256 } })}\n`;
}

/** Every value at the top of its range, and at the bottom: the two corners, always tried first. */
const corner = (top: boolean): Backup => {
  const pick = (range: { min: number; max: number }) => (top ? range.max : range.min);
  const ids = top ? [RANGES.id.max - 2, RANGES.id.max - 1, RANGES.id.max] : [1, 2, 3];
  return {
    changeVersion: pick(RANGES.changeVersion),
    lastId: ids.at(-1) as number,
    records: ids.map((id) => ({
      id,
      name: 'Ada',
      age: top ? 150 : 0,
      city: 'Oslo',
      createdAt: pick(RANGES.time),
      updatedAt: pick(RANGES.time),
      version: pick(RANGES.version),
    })),
    keys: [
      {
        key: top ? '~'.repeat(255) : '!',
        fingerprint: 'f'.repeat(64),
        userId: ids[0] as number,
        createdAt: top ? KEYS_UNTIL : RANGES.time.min,
      },
    ],
  };
};

/** The outside run's case: one change, one id and one version below the ends, so writes reach them. */
const oneBelow = (): Backup => {
  const base = corner(true);
  return {
    ...base,
    changeVersion: RANGES.changeVersion.max - 2,
    lastId: RANGES.lastId.max - 1,
    records: base.records.map((r, i) => ({ ...r, id: RANGES.id.max - 3 + i, version: RANGES.version.max - 1 })),
    keys: base.keys.map((k) => ({ ...k, userId: RANGES.id.max - 3 })),
  };
};

for (const backend of available) {
  describe(`whatever a restore accepts, the service can change, back up and restore again [${backend.name}]`, () => {
    const fresh = databases(backend);
    const folder = tempDir('user-records-restore-ranges-');
    after(folder.cleanup);
    let runs = 0;

    it('PATCH, PUT, DELETE and POST answer 200, or 409 range-exhausted at an end; the backup always restores', async (t) => {
      const seed = Number(process.env.RESTORE_SEED ?? Date.now() % 1_000_000);
      t.diagnostic(`seed ${seed} (replay: RESTORE_SEED=${seed})`);
      const property = fc.asyncProperty(backups, async (backup) => {
        const run = ++runs;
        const first = await fresh();
        const file = join(folder.dir, `${run}.backup`);
        writeFileSync(file, backupText(backup));
        const restored = await runCli(['restore', file, '--quiet'], { env: { DATABASE_URL: first.url } });
        assert.equal(restored.code, 0, restored.stderr);

        // Through the API: a change of each kind, each record read, and a new record. A write that
        // would take a number past its end is refused with 409 range-exhausted, and changes nothing.
        const service = await startApp({ DATABASE_URL: first.url, RATE_LIMIT: 'off' });
        let { changeVersion, lastId } = backup;
        const versions = new Map(backup.records.map((r) => [r.id, r.version]));
        try {
          const [patched, put, deleted] = backup.records as [
            Backup['records'][0],
            Backup['records'][0],
            Backup['records'][0],
          ];
          const read = await service.app.inject({ url: `/users/${patched.id}` });
          assert.equal(read.statusCode, 200, read.body);
          const etag = read.headers.etag as string;
          const write = async (
            request: { method: 'PATCH' | 'PUT' | 'DELETE' | 'POST'; url: string; headers?: Record<string, string> },
            atEnd: string | undefined,
            done: (location: string) => void,
          ) => {
            const answer = await service.app.inject(request);
            const said = `${request.method} ${answer.statusCode} ${answer.body}`;
            if (atEnd === undefined) {
              assert.equal(answer.statusCode, 200, said);
              changeVersion++;
              done(String(answer.headers.location));
            } else {
              assert.equal(answer.statusCode, 409, said);
              assert.match(String(answer.headers['content-type']), /^application\/problem\+json/, said);
              assert.equal(answer.json().type, '/problems/range-exhausted', said);
              assert.match(answer.json().detail, new RegExp(atEnd), said);
            }
          };
          const changeAtEnd = () => (changeVersion >= RANGES.changeVersion.max ? 'change version' : undefined);
          const versionAtEnd = (id: number) =>
            changeAtEnd() ?? ((versions.get(id) as number) >= RANGES.version.max ? 'last version' : undefined);
          const raise = (id: number) => () => versions.set(id, (versions.get(id) as number) + 1);
          const patchUrl = `/users/${patched.id}?age=1`;
          await write(
            { method: 'PATCH', url: patchUrl, headers: { 'if-match': etag } },
            versionAtEnd(patched.id),
            raise(patched.id),
          );
          const putUrl = `/users/${put.id}?name=Put&age=2&city=Here`;
          await write({ method: 'PUT', url: putUrl }, versionAtEnd(put.id), raise(put.id));
          await write({ method: 'DELETE', url: `/users/${deleted.id}` }, changeAtEnd(), () =>
            versions.delete(deleted.id),
          );
          const idAtEnd = changeAtEnd() ?? (lastId >= RANGES.lastId.max ? 'last id' : undefined);
          await write({ method: 'POST', url: '/users?name=New&age=3&city=There' }, idAtEnd, (location) => {
            assert.equal(location, `/users/${lastId + 1}`);
            lastId++;
            versions.set(lastId, 1);
          });
          // A record that is not there is 404 at an end too: the end is said only of a write that would happen.
          let missing = 1;
          while (versions.has(missing)) missing++;
          for (const [method, url] of [
            ['PATCH', `/users/${missing}?age=4`],
            ['DELETE', `/users/${missing}`],
          ] as const) {
            const answer = await service.app.inject({ method, url });
            assert.equal(answer.statusCode, 404, `${method} ${url}: ${answer.body}`);
          }
          for (const url of [`/users?id.gte=${backup.records[0]?.id}&sort=-updatedAt`, `/users/${put.id}`]) {
            const answer = await service.app.inject({ url });
            assert.equal(answer.statusCode, 200, `${answer.statusCode} ${answer.body}`);
          }
        } finally {
          await service.close();
        }

        // Whatever the service made of it, its backup restores, and backs up the same again.
        const copy = join(folder.dir, `${run}-again.backup`);
        const backedUp = await runCli(['backup', copy, '--quiet'], { env: { DATABASE_URL: first.url } });
        assert.equal(backedUp.code, 0, backedUp.stderr);
        const header = JSON.parse(readFileSync(copy, 'utf8').split('\n')[0] as string);
        assert.deepEqual([header.changeVersion, header.lastId], [changeVersion, lastId]);
        const kept = readFileSync(copy, 'utf8')
          .split('\n')
          .filter((line) => line.startsWith('["r"'))
          .map((line) => JSON.parse(line) as [string, number, ...unknown[]]);
        assert.deepEqual(
          kept.map((r) => [r[1], r[7]]),
          [...versions.entries()].sort((a, b) => a[0] - b[0]),
        );
        for (const r of kept) assert.ok((r[6] as number) >= (r[5] as number), `updatedAt before createdAt: ${r}`);
        const second = await fresh();
        const again = await runCli(['restore', copy, '--quiet'], { env: { DATABASE_URL: second.url } });
        assert.equal(again.code, 0, again.stderr);
        // Its own backup is the same, line for line, but for the moment it was taken.
        const third = join(folder.dir, `${run}-third.backup`);
        const thirdMade = await runCli(['backup', third, '--quiet'], { env: { DATABASE_URL: second.url } });
        assert.equal(thirdMade.code, 0, thirdMade.stderr);
        const body = (path: string) =>
          readFileSync(path, 'utf8')
            .replace(/"takenAt":"[^"]*"/, '')
            .replace(/"sha256":"[0-9a-f]*"/, '');
        assert.equal(body(third), body(copy));
      });
      await fc.assert(property, {
        numRuns: scaled(3, 20),
        seed,
        examples: [[corner(true)], [corner(false)], [oneBelow()]],
      });
    });
  });
}
