import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { startApp } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { runCli } from '../helpers/cli.ts';
import { startServer, tempDir } from '../helpers/server.ts';

// Third outside run: an ETag was a record's id and version, or the database's change version, and a
// restore sets both back. After the same number of writes with other values, an ETag read before
// the restore named other content: If-None-Match answered 304 and If-Match let a change through.
// An ETag must name one content of its resource for the life of the database, restores included.

const COUNT = { prefer: 'count=exact' };

for (const backend of BACKENDS) {
  describe(`ETags across a restore while the service runs [${backend.name}]`, { skip: backend.skip }, () => {
    const folder = tempDir('user-records-restore-etags-');
    after(folder.cleanup);

    it('a tag read before the restore is never a 304 nor an If-Match for other content', async () => {
      const database = await backend.fresh();
      const server = await startServer({ DATABASE_URL: database.url, RATE_LIMIT: 'off' });
      const send = (path: string, method = 'GET', headers: Record<string, string> = {}) =>
        fetch(`${server.url}${path}`, { method, headers });
      /** The ETag of an answer, its body read; the full listing is read twice, so the second is the kept copy. */
      const tagOf = async (path: string, headers: Record<string, string> = {}) => {
        if (path === '/users') await (await send(path, 'GET', headers)).text();
        const answer = await send(path, 'GET', headers);
        await answer.text();
        assert.equal(answer.status, 200, path);
        return answer.headers.get('etag') ?? '';
      };
      const write = async (path: string, method: string) => assert.equal((await send(path, method)).status, 200);
      /** The status of a GET with If-None-Match. */
      const revalidate = async (path: string, etag: string, headers: Record<string, string> = {}) => {
        const answer = await send(path, 'GET', { ...headers, 'if-none-match': etag });
        await answer.text();
        return answer.status;
      };
      try {
        await write('/users?name=Ada&age=36&city=London', 'POST');
        await write('/users?name=Ben&age=41&city=Leeds', 'POST');
        const recordAtBackup = await tagOf('/users/1');
        const listingAtBackup = await tagOf('/users');
        const file = join(folder.dir, `${backend.name}.backup`);
        const backup = await runCli(['backup', file, '--quiet'], { env: { DATABASE_URL: database.url } });
        assert.equal(backup.code, 0, backup.stderr);

        // Two writes after the backup, and the tags a client reads then.
        await write('/users/1?city=Paris', 'PATCH');
        await write('/users?name=Cy&age=20&city=Cork', 'POST');
        const tags = {
          record: await tagOf('/users/1'),
          listing: await tagOf('/users'),
          counted: await tagOf('/users', COUNT),
          filtered: await tagOf('/users?age.gte=0'),
          fields: await tagOf('/users?fields=id,city'),
        };
        assert.match(tags.listing, /^"/, 'the kept listing has a strong tag');

        const restore = await runCli(['restore', file, '--replace', '--quiet'], {
          env: { DATABASE_URL: database.url },
        });
        assert.equal(restore.code, 0, restore.stderr);
        // The restore brought back exactly the record read before the backup: that copy is current.
        assert.equal(await revalidate('/users/1', recordAtBackup), 304);
        // A listing's tag names a change version of one history, and the restore began another.
        assert.equal(await revalidate('/users', listingAtBackup), 200);

        // The same two writes with other values: the record's version and the change version are
        // those of the tags read above again.
        await write('/users/1?city=Rome', 'PATCH');
        await write('/users?name=Dee&age=50&city=Derby', 'POST');
        assert.equal(await revalidate('/users/1', tags.record), 200, 'record');
        assert.equal(await revalidate('/users', tags.listing), 200, 'listing');
        await send('/users'); // kept again
        assert.equal(await revalidate('/users', tags.listing), 200, 'kept listing');
        assert.equal(await revalidate('/users', tags.counted, COUNT), 200, 'listing with its count');
        assert.equal(await revalidate('/users?age.gte=0', tags.filtered), 200, 'filtered listing');
        assert.equal(await revalidate('/users?fields=id,city', tags.fields), 200, 'listing with fields');
        const stale = await send('/users/1?age=99', 'PATCH', { 'if-match': tags.record });
        assert.equal(stale.status, 412, await stale.text());
        const now = await send('/users/1');
        assert.match(await now.text(), /"age":"36","city":"Rome"/, 'nothing was changed');
        const fresh = await send('/users/1?age=37', 'PATCH', { 'if-match': now.headers.get('etag') ?? '' });
        assert.equal(fresh.status, 200, 'the tag read now is current');
      } finally {
        await server.stop();
        await database.drop();
      }
    });
  });
}

describe('the ETag of a page covers what it answers besides the body', () => {
  it('its count (Prefer: count=exact) and its Link to the next page', async () => {
    const { app, close } = await startApp();
    try {
      const post = (name: string) => app.inject({ method: 'POST', url: `/users?name=${name}&age=1&city=X` });
      const page = (headers: Record<string, string> = {}) =>
        app.inject({ method: 'GET', url: '/users?limit=1&fields=id', headers: { ...COUNT, ...headers } });
      await post('Ada');
      const first = await page();
      assert.equal(first.headers['x-total-count'], '1');
      assert.equal(first.headers.link, undefined);
      await post('Ben');
      // The same body, {"data":[{"id":1}]}, now with a count of 2 and a next page.
      const again = await page({ 'if-none-match': String(first.headers.etag) });
      assert.equal(again.statusCode, 200);
      assert.equal(again.body, first.body);
      assert.equal(again.headers['x-total-count'], '2');
      assert.match(String(again.headers.link), /rel="next"/);
    } finally {
      await close();
    }
  });
});
