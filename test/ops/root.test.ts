// `/`, where a newcomer starts: a small page of links for a browser, the same links as JSON for an
// API client, public like the docs and admin pages; and the start-up line that names the pages to
// open. `GET /` was a 404 and the log named no address.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { VERSION } from '../../src/config/version.ts';
import { prefersHtml } from '../../src/ops/accept.ts';
import { startUrls } from '../../src/ops/start-urls.ts';
import { appForSuite } from '../helpers/app.ts';
import { axeViolations, launchBrowser, needsChromium, type PageWatch, watchedPage } from '../helpers/browser.ts';
import { type Answer, call } from '../helpers/http.ts';
import { runScenarios } from '../helpers/scenario.ts';
import { startServer, tempDir } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const JSON_CSP = "default-src 'none';frame-ancestors 'none'";
const TOKENS = 'read:root-test-read-token-5b8e1c7a3f9d,write:root-test-write-token-2d6f4a9c1e7b';
const CHROME =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7';
const FIREFOX = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** Which form each Accept gets: a browser's gets the page, everything else the JSON. */
const ACCEPTS: ReadonlyArray<{ name: string; accept: string | undefined; html: boolean }> = [
  { name: 'no Accept', accept: undefined, html: false },
  { name: 'curl (*/*)', accept: '*/*', html: false },
  { name: 'application/json', accept: 'application/json', html: false },
  { name: 'Chromium', accept: CHROME, html: true },
  { name: 'Firefox and Safari', accept: FIREFOX, html: true },
  { name: 'text/html alone', accept: 'text/html', html: true },
  { name: 'text/* over JSON', accept: 'text/*, application/json;q=0.5', html: true },
  { name: 'JSON over HTML', accept: 'text/html;q=0.5, application/json', html: false },
  { name: 'a tie', accept: 'text/html, application/json', html: false },
  { name: 'HTML refused, the rest welcome', accept: 'text/html;q=0, */*', html: false },
  { name: 'the specific range wins over the wildcard', accept: 'text/*;q=0.1, text/html;q=0.9, */*;q=0.5', html: true },
  { name: 'neither (an image)', accept: 'image/png', html: false },
  { name: 'upper case', accept: 'TEXT/HTML', html: true },
  { name: 'a q that is not a number counts as 1', accept: 'text/html;q=x, application/json;q=0.2', html: true },
  { name: 'junk', accept: ';;, /, q=1, */*;q=, text/html;q', html: true },
  { name: 'empty', accept: '', html: false },
];

function assertForm(answer: Answer, html: boolean, what: string): void {
  assert.equal(answer.status, 200, what);
  assert.match(answer.headers.get('vary') ?? '', /accept/i, `${what}: Vary`);
  const csp = answer.headers.get('content-security-policy') ?? '';
  if (html) {
    assert.match(answer.headers.get('content-type') ?? '', /^text\/html; charset=utf-8$/, what);
    assert.match(answer.text, /^<!doctype html>/, what);
    assert.match(csp, /^default-src 'none'; /, `${what}: CSP`);
    assert.doesNotMatch(csp, /script-src|https?:|\*|'unsafe-/, `${what}: the page's CSP allows a script or more`);
    assert.match(csp, /frame-ancestors 'none'/, `${what}: CSP`);
  } else {
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, what);
    assert.equal(answer.json.name, 'user-records', what);
    assert.equal(csp, JSON_CSP, `${what}: a JSON answer's CSP allows nothing`);
  }
}

/** The links of the page, in order. */
const hrefs = (page: string) => [...page.matchAll(/<a href="([^"]+)"/g)].map((match) => match[1]);

describe('GET / (in process)', () => {
  const suite = appForSuite();

  for (const row of ACCEPTS) {
    it(`${row.name}: ${row.html ? 'the page' : 'JSON'}`, async () => {
      assert.equal(prefersHtml(row.accept), row.html, 'prefersHtml');
      const headers = row.accept === undefined ? undefined : { accept: row.accept };
      assertForm(await call(suite.current.app, 'GET', '/', { headers }), row.html, row.name);
    });
  }

  it('the JSON: name, version, links to what is served, and where the settings are described', async () => {
    const answer = await call(suite.current.app, 'GET', '/');
    assert.deepEqual(answer.json, {
      name: 'user-records',
      version: VERSION,
      links: {
        admin: '/admin',
        docs: '/docs',
        openapi: '/openapi.json',
        users: '/users',
        events: '/users/events',
        health: '/healthz',
      },
      settings: 'docs/operations.md#settings',
    });
    for (const href of Object.values(answer.json.links as Record<string, string>)) {
      assert.ok(suite.current.app.hasRoute({ method: 'GET', url: href }), `${href} is not served`);
    }
    const [file, section] = (answer.json.settings as string).split('#');
    assert.match(readFileSync(join(ROOT, file ?? ''), 'utf8'), new RegExp(`^## ${section}$`, 'im'));
  });

  it('the page links to the same places, runs no script, and names the settings', async () => {
    const json = (await call(suite.current.app, 'GET', '/')).json as { links: Record<string, string> };
    const page = (await call(suite.current.app, 'GET', '/', { headers: { accept: CHROME } })).text;
    assert.deepEqual(hrefs(page), Object.values(json.links));
    assert.doesNotMatch(page, /<script|\son\w+=|style=|<style/i, 'inline script or style');
    assert.match(page, /<link rel="stylesheet" href="\/admin\/app\.css" \/>/);
    assert.match(page, /docs\/operations\.md/);
    assert.match(page, /user-records serve --help/);
    assert.ok(page.includes(`version ${VERSION}`));
  });

  it('HEAD / answers the headers of GET / and no body, in either form', async () => {
    for (const accept of ['*/*', CHROME]) {
      const get = await call(suite.current.app, 'GET', '/', { headers: { accept } });
      const head = await call(suite.current.app, 'HEAD', '/', { headers: { accept } });
      assert.equal(head.status, 200);
      assert.equal(head.text, '');
      for (const name of ['content-type', 'content-length', 'etag', 'vary', 'content-security-policy'])
        assert.equal(head.headers.get(name), get.headers.get(name), `HEAD ${accept}: ${name}`);
    }
  });

  it('the two forms have their own ETags, each answered 304 when current', async () => {
    const json = await call(suite.current.app, 'GET', '/');
    const page = await call(suite.current.app, 'GET', '/', { headers: { accept: CHROME } });
    const etag = json.headers.get('etag') ?? '';
    assert.notEqual(etag, page.headers.get('etag'));
    const again = await call(suite.current.app, 'GET', '/', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });
});

describe('/ with tokens configured: public, like /docs and /admin', () => {
  const suite = appForSuite({ API_TOKENS: TOKENS });
  runScenarios(
    () => suite.current,
    [
      { name: 'the JSON needs no token', method: 'GET', url: '/', expectedStatus: 200 },
      {
        name: 'the page needs no token',
        method: 'GET',
        url: '/',
        headers: { accept: CHROME },
        expectedStatus: 200,
        expectedHeaders: { 'content-type': 'text/html; charset=utf-8' },
      },
      { name: 'nor does HEAD', method: 'HEAD', url: '/', expectedStatus: 200 },
      {
        name: 'OPTIONS lists the methods',
        method: 'OPTIONS',
        url: '/',
        expectedStatus: 204,
        expectedHeaders: { allow: 'GET, HEAD, OPTIONS' },
      },
      {
        name: 'a POST is 405, not 401: the path is public',
        method: 'POST',
        url: '/',
        expectedStatus: 405,
        expectedProblem: { type: '/problems/method-not-allowed' },
        expectedHeaders: { allow: 'GET, HEAD, OPTIONS' },
      },
      {
        name: 'a malformed query is 400',
        method: 'GET',
        url: '/?a=%E0%A4%A',
        expectedStatus: 400,
        expectedProblem: {},
      },
      // What it links to keeps its own rule.
      { name: '/users still needs a token', method: 'GET', url: '/users', expectedStatus: 401, expectedProblem: {} },
    ],
  );
});

describe('the start-up line names the pages to open', () => {
  const CASES: ReadonlyArray<{ address: string; origin: string; elsewhere: boolean }> = [
    { address: '127.0.0.1', origin: 'http://127.0.0.1:3000', elsewhere: false },
    { address: '::1', origin: 'http://[::1]:3000', elsewhere: false },
    { address: '192.0.2.7', origin: 'http://192.0.2.7:3000', elsewhere: false },
    { address: '2001:db8::7', origin: 'http://[2001:db8::7]:3000', elsewhere: false },
    // Every address: the pages are named at loopback, where this machine reaches them.
    { address: '0.0.0.0', origin: 'http://127.0.0.1:3000', elsewhere: true },
    { address: '::', origin: 'http://[::1]:3000', elsewhere: true },
  ];
  for (const row of CASES) {
    it(`listening on ${row.address}: ${row.origin}`, () => {
      const line = startUrls(row.address, 3000);
      assert.equal(line.admin, `${row.origin}/admin`);
      assert.equal(line.docs, `${row.origin}/docs`);
      assert.ok(line.msg.includes(`${row.origin}/admin`) && line.msg.includes(`${row.origin}/docs`), line.msg);
      assert.equal(line.msg.includes(`every address (${row.address})`), row.elsewhere, line.msg);
    });
  }

  for (const workers of ['1', '2']) {
    it(`the real server (WORKERS=${workers}) prints them on its port once, and they open`, async () => {
      const data = tempDir();
      const server = await startServer({ DATABASE_URL: join(data.dir, 'users.db'), WORKERS: workers });
      try {
        const wanted = { admin: `${server.url}/admin`, docs: `${server.url}/docs` };
        // With workers the primary prints it once all listen, which may follow the line that made startServer return.
        let lines: Array<Record<string, unknown>> = [];
        for (let tries = 0; tries < 100 && lines.length === 0; tries++) {
          lines = server.logs
            .filter((line) => line.startsWith('{'))
            .map((line) => JSON.parse(line) as Record<string, unknown>)
            .filter((line) => line.admin !== undefined);
          if (lines.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.equal(lines.length, 1, `${lines.length} lines name the pages:\n${server.logs.join('\n')}`);
        assert.deepEqual({ admin: lines[0]?.admin, docs: lines[0]?.docs }, wanted);
        for (const url of Object.values(wanted)) {
          const answer = await fetch(url);
          assert.equal(answer.status, 200, url);
          assert.match(answer.headers.get('content-type') ?? '', /^text\/html/, url);
          await answer.arrayBuffer();
        }
      } finally {
        await server.stop();
        data.cleanup();
      }
    });
  }
});

describe('/ in a real Chromium, tokens required', () => {
  it('shows the page styled as the admin page, blocks nothing, and its links open', async (t) => {
    if (!needsChromium(t)) return;
    const data = tempDir();
    const server = await startServer({ DATABASE_URL: join(data.dir, 'users.db'), API_TOKENS: TOKENS });
    const browser = await launchBrowser();
    try {
      const watch: PageWatch = { leaked: browser.leaked, errors: [] };
      // /users and /users/events answer 401 without a token: expected of the links, not of the page.
      const page = await watchedPage(browser.context, watch);
      const blocked: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) blocked.push(message.text());
      });
      const answer = await page.goto(`${server.url}/`);
      assert.equal(answer?.status(), 200);
      assert.equal(await page.title(), 'user-records');
      assert.deepEqual(await axeViolations(page), [], 'the start page');
      // The admin page's stylesheet applies: its header is shaded, its text not the browser's serif.
      const header = await page.evaluate("getComputedStyle(document.querySelector('header')).backgroundColor");
      assert.equal(header, 'rgb(246, 248, 250)');
      const font = await page.evaluate('getComputedStyle(document.body).fontFamily');
      assert.match(String(font), /system-ui/);
      const links = await Promise.all((await page.locator('main a').all()).map((link) => link.getAttribute('href')));
      assert.deepEqual(links, ['/admin', '/docs', '/openapi.json', '/users', '/users/events', '/healthz']);
      await page.locator('a[href="/admin"]').click();
      await page.waitForURL(`${server.url}/admin`);
      await page.locator('#app').waitFor();
      await page.goBack();
      await page.locator('a[href="/docs"]').click();
      await page.waitForURL(/\/docs/);
      assert.deepEqual(blocked, [], `the page's CSP blocked something:\n${blocked.join('\n')}`);
      assert.deepEqual(watch.leaked, []);
      assert.deepEqual(watch.errors, []);
    } finally {
      await browser.close();
      await server.stop();
      data.cleanup();
    }
  });
});
