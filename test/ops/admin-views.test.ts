import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Page } from 'playwright-core';
import { type InProcessApp, startApp } from '../helpers/app.ts';
import { BACKENDS } from '../helpers/backends.ts';
import { launchBrowser, needsChromium, type PageWatch, watchedPage } from '../helpers/browser.ts';
import { CHROMIUM } from '../helpers/chromium.ts';

/**
 * The admin page on views other than the unfiltered first page, and what it tells the person
 * using it: the count follows every change, each change is confirmed where it can be seen, a
 * filter's error stands at its field. (admin.test.ts has the page's other work.)
 */

/** Long enough for a busy machine; each wait ends as soon as its condition holds. */
const WAIT_MS = 20_000;
/**
 * The count follows a change within 2 s by design; a busy machine may take longer, so a test
 * waits up to this long and asserts only that it becomes right without a reload.
 */
const COUNT_WAIT_MS = 10_000;

async function create(app: FastifyInstance, name: string, age: number, city: string): Promise<number> {
  const query = new URLSearchParams({ name, age: String(age), city, fields: 'id' });
  const answer = await app.inject({ method: 'POST', url: `/users?${query}` });
  assert.equal(answer.statusCode, 200, answer.body);
  return (JSON.parse(answer.body) as { data: [{ id: number }] }).data[0].id;
}

async function remove(app: FastifyInstance, id: number): Promise<void> {
  assert.equal((await app.inject({ method: 'DELETE', url: `/users/${id}` })).statusCode, 200);
}

/** How many records the service itself counts for `query`. */
async function counted(app: FastifyInstance, query: string): Promise<number> {
  const params = new URLSearchParams(query);
  params.set('limit', '1');
  const answer = await app.inject({ url: `/users?${params}`, headers: { prefer: 'count=exact' } });
  assert.equal(answer.statusCode, 200, answer.body);
  return Number(answer.headers['x-total-count']);
}

/** Waits (bounded) until the page's caption says `n` match, with no reload. */
async function countBecomes(page: Page, n: number, what: string): Promise<void> {
  const caption = page.locator('table.records caption');
  try {
    await page.waitForFunction(
      (text) => document.querySelector('table.records caption')?.textContent?.endsWith(text) === true,
      ` of ${n.toLocaleString('en')} matching`,
      { timeout: COUNT_WAIT_MS },
    );
  } catch {
    assert.fail(`${what}: the count says "${await caption.textContent()}", not ${n} matching`);
  }
}

async function fillRecord(page: Page, name: string, age: string, city: string): Promise<void> {
  await page.getByLabel('Name', { exact: true }).fill(name);
  await page.getByLabel('Age', { exact: true }).fill(age);
  await page.getByLabel('City', { exact: true }).fill(city);
}

const row = (page: Page, id: number) => page.locator(`tr[data-id="${id}"]`);

for (const backend of BACKENDS) {
  describe(`/admin on filtered, searched, sorted and later pages (${backend.name})`, { skip: backend.skip }, () => {
    let running: InProcessApp | undefined;
    let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
    const watch: PageWatch = { leaked: [], errors: [] };

    before(async () => {
      if (!existsSync(CHROMIUM)) return;
      running = await startApp({ RATE_LIMIT: 'off' }, backend);
      browser = await launchBrowser();
      watch.leaked = browser.leaked;
    });
    after(async () => {
      try {
        await browser?.close();
      } finally {
        await running?.close();
      }
    });

    const open = async (query: string): Promise<{ page: Page; app: FastifyInstance }> => {
      assert.ok(running !== undefined && browser !== undefined, 'the browser or the app did not start');
      const page = await watchedPage(browser.context, watch);
      assert.equal((await page.goto(`${running.url}/admin${query}`))?.status(), 200);
      await page.getByText('Live: changes appear as they happen').waitFor({ timeout: WAIT_MS });
      return { page, app: running.app };
    };

    // Each view, and the changes made while it is shown: through the API (another client, seen on
    // the change stream) and through the page itself.
    const VIEWS = [
      { name: 'a filter, sorted, on its second page', query: '?city=Countville&sort=-age&limit=10', page: 2 },
      { name: 'a search on its first page', query: '?q=Searchable', page: 1 },
      { name: 'the unfiltered list on its second page', query: '?limit=10', page: 2 },
    ];

    it('seeds records for the views', async (t) => {
      if (!needsChromium(t)) return;
      assert.ok(running !== undefined);
      for (let i = 0; i < 23; i++) await create(running.app, `Counted ${i}`, 20 + i, 'Countville');
      for (let i = 0; i < 4; i++) await create(running.app, `Searchable ${i}`, 30 + i, 'Elsewhere');
    });

    for (const view of VIEWS) {
      it(`keeps the count right without a reload: ${view.name}`, async (t) => {
        if (!needsChromium(t)) return;
        const { page, app } = await open(view.query);
        const query = new URLSearchParams(view.query).toString();
        for (let n = 1; n < view.page; n++) {
          await page.getByRole('button', { name: 'Next page' }).click();
          await page
            .locator('nav.pages span')
            .getByText(`Page ${n + 1}`)
            .waitFor({ timeout: WAIT_MS });
        }
        await countBecomes(page, await counted(app, query), 'on opening');

        // Another client adds and deletes, close together and one at a time.
        const theirs = [];
        for (let i = 0; i < 3; i++) theirs.push(await create(app, `Searchable Countville ${i}`, 40 + i, 'Countville'));
        await countBecomes(page, await counted(app, query), 'after three adds through the API');
        await remove(app, theirs[0] ?? 0);
        await countBecomes(page, await counted(app, query), 'after a delete through the API');
        await remove(app, theirs[1] ?? 0);
        await remove(app, theirs[2] ?? 0);
        await countBecomes(page, await counted(app, query), 'after two more deletes through the API');

        // This page adds one that matches the view, then deletes one it shows.
        await fillRecord(page, 'Searchable Mine', '55', 'Countville');
        await page.getByRole('button', { name: 'Add record' }).click();
        await countBecomes(page, await counted(app, query), 'after an add through the page');
        const shown = Number(await page.locator('tr[data-id]').first().getAttribute('data-id'));
        await row(page, shown)
          .getByRole('button', { name: /^Delete record/ })
          .click();
        await page
          .getByRole('alertdialog', { name: 'Delete this record?' })
          .getByRole('button', { name: 'Delete', exact: true })
          .click();
        await row(page, shown).waitFor({ state: 'detached', timeout: WAIT_MS });
        await countBecomes(page, await counted(app, query), 'after a delete through the page');
        await page.close();
      });
    }

    it('made no request to another host and logged no error', (t) => {
      if (!needsChromium(t)) return;
      assert.deepEqual(watch.leaked, []);
      assert.deepEqual(watch.errors, []);
    });
  });
}
