import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { type InProcessApp, startApp } from '../helpers/app.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.ts';
import { type RunningServer, startServer, tempDir } from '../helpers/server.ts';

const SCREENSHOT = '/tmp/docs.png';
const RENDER_TIMEOUT_MS = 20_000;

describe('/docs in a real browser with the network off and tokens required', () => {
  const cleanups: Array<() => void> = [];
  /** Every request the page tried to send anywhere but 127.0.0.1; each was aborted. */
  let leaked: string[] = [];
  /** Uncaught errors in the page, shown when an assertion fails. */
  const pageErrors: string[] = [];
  /** What the page's Content-Security-Policy blocked, as Chromium reports it on the console. */
  const cspViolations: string[] = [];
  let server: RunningServer | undefined;
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;

  before(async () => {
    // Without Chromium the test below is skipped on a developer machine and fails in CI (CI=true),
    // where .ci/run installs it.
    if (!existsSync(CHROMIUM)) return;
    const data = tempDir();
    cleanups.push(data.cleanup);
    // With tokens configured: the page and everything it loads must still need none.
    server = await startServer({
      DATABASE_URL: join(data.dir, 'users.db'),
      API_TOKENS: 'read:docs-test-read-token-7c2e9a4b5d1f',
    });

    // Requests anywhere but 127.0.0.1 are aborted and listed.
    browser = await launchBrowser();
    context = browser.context;
    leaked = browser.leaked;
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
  });

  after(async () => {
    try {
      await browser?.close();
    } finally {
      try {
        await server?.stop();
      } finally {
        for (const cleanup of cleanups.reverse()) cleanup();
      }
    }
  });

  it('renders the title and the operations without leaving 127.0.0.1', async (t) => {
    if (!existsSync(CHROMIUM) && process.env.CI !== 'true') {
      t.skip(`Chromium is not installed at ${CHROMIUM}: apt-get install -y --no-install-recommends chromium`);
      return;
    }
    assert.ok(
      existsSync(CHROMIUM),
      `Chromium is not installed at ${CHROMIUM}; install it with ` +
        '`apt-get update && apt-get install -y --no-install-recommends chromium` (CI installs it).',
    );
    assert.ok(page !== undefined && server !== undefined, 'the browser or the server did not start');
    const response = await page.goto(`${server.url}/docs`, { waitUntil: 'load' });
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);

    await page
      .locator('.opblock', { hasText: '/users' })
      .first()
      .waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS })
      .catch((error: unknown) => {
        throw new Error(
          `the operations list did not render: ${String(error)}\npage errors: ${JSON.stringify(pageErrors)}\n` +
            `blocked requests: ${JSON.stringify(leaked)}`,
        );
      });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    const title = (await page.locator('.info .title').first().textContent()) ?? '';
    assert.match(title, /user-records/, `the page title reads ${JSON.stringify(title)}`);

    const operations = await page.locator('.opblock').count();
    assert.ok(operations >= 6, `expected at least 6 operation blocks, saw ${operations}`);

    // The OpenAPI document declares bearer auth, so the page offers to send a token.
    assert.ok(await page.locator('.btn.authorize').first().isVisible(), 'no Authorize button');

    assert.deepEqual(leaked, [], `requests left 127.0.0.1: ${leaked.join(', ')}`);
    assert.deepEqual(cspViolations, [], `the page's CSP blocked something:\n${cspViolations.join('\n')}`);
  });
});

// "Try it out" on every operation the page shows, with the values it fills in by itself: each must
// succeed (a 405 where the document says the method is not served), in one session, without tokens.
describe('/docs: Try it out works on every operation with the defaults it shows', () => {
  let running: InProcessApp | undefined;
  let context: BrowserContext | undefined;
  const profile = tempDir('user-records-chromium-');

  before(async () => {
    if (!existsSync(CHROMIUM)) return;
    running = await startApp({ RATE_LIMIT: 'off' });
    context = await chromium.launchPersistentContext(profile.dir, { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  after(async () => {
    try {
      await context?.close();
      await running?.close();
    } finally {
      profile.cleanup();
    }
  });

  it('every operation answers as documented, and no two tries share an Idempotency-Key', async (t) => {
    if (!existsSync(CHROMIUM) && process.env.CI !== 'true') {
      t.skip(`Chromium is not installed at ${CHROMIUM}`);
      return;
    }
    assert.ok(running !== undefined && context !== undefined, 'the browser or the app did not start');
    const doc = JSON.parse((await running.app.inject({ url: '/openapi.json' })).body) as {
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
    };
    // Create first (the other record operations use id 1), delete last.
    const rank = (id: string) => (id === 'createUser' ? 0 : id === 'deleteUser' ? 2 : 1);
    const operations = Object.values(doc.paths)
      .flatMap((item) => Object.entries(item))
      .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map(([, operation]) => ({ id: operation.operationId, tag: operation.tags[0] as string }))
      // The event stream never ends, and the page shows an answer only once its body has: that
      // operation's description says to follow it with curl -N or an EventSource instead (its
      // behaviour is tested in test/changes/changes.test.ts).
      .filter(({ id }) => id !== 'streamUserEvents')
      .sort((a, b) => rank(a.id) - rank(b.id));
    const page = context.pages()[0] ?? (await context.newPage());
    const sent: string[] = [];
    page.on('request', (request) => {
      const key = request.headers()['idempotency-key'];
      if (key !== undefined) sent.push(key);
    });
    await page.goto(`${running.url}/docs`, { waitUntil: 'load' });
    const statuses: string[] = [];
    for (const { id, tag } of operations) {
      const block = page.locator(`#operations-${tag}-${id}`);
      await block.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
      await block.locator('.opblock-summary').first().click();
      await block.locator('button.try-out__btn').click();
      await block.locator('button.execute').click();
      const status = block.locator('.live-responses-table .response .response-col_status').first();
      await status.waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
      const code = ((await status.textContent()) ?? '').trim();
      statuses.push(`${id} ${code}`);
      const expected = id.endsWith('NotAllowed') ? /^405$/ : /^2\d\d$/;
      assert.match(code, expected, `${id}: ${code}; so far ${statuses.join(', ')}`);
    }
    t.diagnostic(statuses.join(', '));
    assert.ok(statuses.length >= 12, `only ${statuses.length} operations tried`);
    assert.equal(new Set(sent).size, sent.length, `an Idempotency-Key sent twice: ${sent.join(', ')}`);
  });
});
