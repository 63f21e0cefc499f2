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
// succeed, in one session, without tokens.
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
    // The page's copy of the document, in the page's order: create comes before the other record
    // operations (they use id 1), delete after them.
    const doc = JSON.parse((await running.app.inject({ url: '/docs/json' })).body) as {
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
    };
    const operations = Object.values(doc.paths)
      .flatMap((item) => Object.values(item))
      .map((operation) => ({ id: operation.operationId, tag: operation.tags[0] as string }))
      // The event stream never ends, and the page shows an answer only once its body has: that
      // operation's description says to follow it with curl -N or an EventSource instead (its
      // behaviour is tested in test/changes/changes.test.ts).
      .filter(({ id }) => id !== 'streamUserEvents');
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
      assert.match(code, /^2\d\d$/, `${id}: ${code}; so far ${statuses.join(', ')}`);
      // Closed again: every open operation with its answer makes each later click redraw more.
      await block.locator('.opblock-summary').first().click();
      await block.locator('button.execute').waitFor({ state: 'detached', timeout: RENDER_TIMEOUT_MS });
    }
    t.diagnostic(statuses.join(', '));
    assert.ok(statuses.length >= 12, `only ${statuses.length} operations tried`);
    assert.equal(new Set(sent).size, sent.length, `an Idempotency-Key sent twice: ${sent.join(', ')}`);
  });
});

// The page a user reads on a phone: the operations they call, in the order they learn them, the
// event stream as examples to copy rather than a button that never answers, no sideways scroll.
describe('/docs at 390 px: the operations a user calls, in order, readable on a phone', () => {
  /** The operations the page shows, top to bottom. */
  const ORDER = [
    'listUsers',
    'createUser',
    'getUser',
    'replaceUser',
    'updateUser',
    'deleteUser',
    'userStats',
    'streamUserEvents',
    'getLiveness',
    'getReadiness',
    'getMetrics',
    'getOpenApi',
    'getTokenScope',
    'getHome',
    'getAdminPage',
    'getDocsPage',
  ];
  let running: InProcessApp | undefined;
  let browser: Awaited<ReturnType<typeof launchBrowser>> | undefined;

  before(async () => {
    if (!existsSync(CHROMIUM)) return;
    running = await startApp();
    browser = await launchBrowser({ width: 390, height: 844 });
  });
  after(async () => {
    try {
      await browser?.close();
    } finally {
      await running?.close();
    }
  });

  it('shows the operations in order, the stream as examples, the name and version, and fits 390 px', async (t) => {
    if (!existsSync(CHROMIUM) && process.env.CI !== 'true') {
      t.skip(`Chromium is not installed at ${CHROMIUM}`);
      return;
    }
    assert.ok(running !== undefined && browser !== undefined, 'the browser or the app did not start');
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await page.goto(`${running.url}/docs`, { waitUntil: 'load' });
    const blocks = page.locator('#swagger-ui .opblock');
    await blocks.first().waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });

    const shown = await page
      .locator('#swagger-ui .opblock[id^="operations-"]')
      .evaluateAll((nodes) => nodes.map((node) => node.id.replace(/^operations-[^-]+-/, '')));
    assert.deepEqual(
      shown.filter((id) => id !== 'userChanged'),
      ORDER,
    );

    const info = (await page.locator('.info').first().textContent()) ?? '';
    const doc = JSON.parse((await running.app.inject({ url: '/openapi.json' })).body) as { info: { version: string } };
    assert.match(info, /user-records/);
    assert.ok(info.includes(doc.info.version), `the version ${doc.info.version} is not at the top: ${info}`);
    assert.match(info, /HEAD/, 'the introduction says what HEAD answers');
    assert.match(info, /OPTIONS/, 'the introduction says what OPTIONS answers');
    assert.match(info, /405/, 'the introduction says what a method a path does not serve answers');
    assert.match(await page.title(), /user-records/);
    assert.match((await page.locator('link[rel="icon"]').first().getAttribute('type')) ?? '', /svg/);
    assert.equal(
      await page.locator('meta[name="viewport"]').getAttribute('content'),
      'width=device-width, initial-scale=1',
    );

    // The stream: examples to copy, and no Try it out.
    const stream = page.locator('#operations-users-streamUserEvents');
    await stream.locator('.opblock-summary').first().click();
    await stream.locator('.opblock-body').waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
    const text = (await stream.textContent()) ?? '';
    for (const example of ['curl -N', 'new EventSource', 'event: user.created', 'id: ']) {
      assert.ok(text.includes(example), `the stream's description lacks ${JSON.stringify(example)}`);
    }
    assert.equal(await stream.locator('button.try-out__btn').isVisible(), false, 'the stream offers Try it out');

    // A record operation expanded, with its Try it out open: still no sideways scroll.
    const create = page.locator('#operations-users-createUser');
    await create.locator('.opblock-summary').first().click();
    await create.locator('button.try-out__btn').click();
    await create.locator('button.execute').waitFor({ state: 'visible', timeout: RENDER_TIMEOUT_MS });
    await page.screenshot({ path: '/tmp/docs-390.png', fullPage: true });
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
    assert.ok(width <= 390, `the page is ${width} px wide at 390 px (screenshot /tmp/docs-390.png)`);
    assert.deepEqual(browser.leaked, []);
  });
});
