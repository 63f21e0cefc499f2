import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, type TestContext } from 'node:test';
import axe from 'axe-core';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { type InProcessApp, startApp } from './app.ts';
import type { Backend } from './backends.ts';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.ts';
import { tempDir } from './server.ts';

/** What a page did that a test of it forbids, gathered while it runs. */
export interface PageWatch {
  /** Requests to any host but 127.0.0.1 (each was aborted). */
  leaked: string[];
  /** Uncaught errors, and console errors other than the answers the test provoked. */
  errors: string[];
}

/**
 * Chromium's console names every answer a fetch got outside 2xx ("Failed to load resource: the
 * server responded with a status of 412"). The page handles those it is meant to (a 400, 401, 404,
 * 412) and shows them; such lines are not errors of the page. Anything else is.
 */
const HANDLED_ANSWER = /^Failed to load resource: the server responded with a status of (400|401|403|404|410|412)/;

/** A headless Chromium with a throwaway profile that lets requests reach 127.0.0.1 and nothing else. */
export async function launchBrowser(
  viewport = { width: 1200, height: 900 },
): Promise<{ context: BrowserContext; leaked: string[]; close(): Promise<void> }> {
  const profile = tempDir('user-records-chromium-');
  const leaked: string[] = [];
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile.dir, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      viewport,
    });
  } catch (error) {
    profile.cleanup();
    throw error;
  }
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    let host = '';
    try {
      host = new URL(url).hostname;
    } catch {
      // An unparsable URL is not local either.
    }
    if (host === '127.0.0.1') await route.continue();
    else {
      leaked.push(url);
      await route.abort('internetdisconnected');
    }
  });
  return {
    context,
    leaked,
    close: async () => {
      try {
        await context.close();
      } finally {
        profile.cleanup();
      }
    },
  };
}

/** A Chromium as launchBrowser starts it. */
export type LaunchedBrowser = Awaited<ReturnType<typeof launchBrowser>>;

/** What a suite of page tests runs against, started before its tests and closed after them. */
export interface BrowserSuite {
  /** What the suite's pages did that a test forbids; `leaked` is the browser's own list. */
  readonly watch: PageWatch;
  /** The app and the browser; fails the test that asks when either did not start. */
  ready(): { running: InProcessApp; browser: LaunchedBrowser };
}

/**
 * The set-up every suite of the admin page shares: the service in this process (startApp, on a
 * fresh database of `backend` when given) with the settings `env` gives (a function runs in
 * `before`, for settings made then, such as a signing key), `seed` run against it, then a Chromium;
 * both closed after the suite. Where Chromium is missing nothing starts, and each test skips itself
 * with needsChromium.
 */
export function browserSuite(
  env: Record<string, string> | (() => Promise<Record<string, string>>),
  options: { backend?: Backend; seed?: (running: InProcessApp) => Promise<void> } = {},
): BrowserSuite {
  let running: InProcessApp | undefined;
  let browser: LaunchedBrowser | undefined;
  const watch: PageWatch = { leaked: [], errors: [] };
  before(async () => {
    if (!existsSync(CHROMIUM)) return;
    const settings = typeof env === 'function' ? await env() : env;
    running = await startApp(settings, options.backend);
    await options.seed?.(running);
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
  return {
    watch,
    ready() {
      assert.ok(running !== undefined && browser !== undefined, 'the browser or the app did not start');
      return { running, browser };
    },
  };
}

/** A new tab that reports into `watch`; `expected` names console lines a test provoked on purpose. */
export async function watchedPage(context: BrowserContext, watch: PageWatch, expected?: RegExp): Promise<Page> {
  const page = await context.newPage();
  page.on('pageerror', (error) => watch.errors.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (HANDLED_ANSWER.test(text) || expected?.test(text)) return;
    watch.errors.push(`console: ${text}`);
  });
  return page;
}

/** Without Chromium: skipped on a developer machine, a failure in CI (where .ci/run installs it). */
export function needsChromium(t: TestContext): boolean {
  if (existsSync(CHROMIUM)) return true;
  assert.notEqual(process.env.CI, 'true', `Chromium is not installed at ${CHROMIUM} (.ci/run installs it)`);
  t.skip(`Chromium is not installed at ${CHROMIUM}: apt-get install -y --no-install-recommends chromium`);
  return false;
}

/** The serious and critical accessibility violations axe-core finds on the page as it is now. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axe.source);
  const results = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as axe.AxeResults;
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id}: ${violation.nodes.map((node) => node.target).join(' ')}`);
}
