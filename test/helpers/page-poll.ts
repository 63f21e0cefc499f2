import type { Page } from 'playwright-core';

/**
 * Polls `expression` in the page until it is true, for at most `ms`, and says whether it became
 * true. Through the DevTools protocol, as page.evaluate goes: waitForFunction polls with an eval
 * in the page, which a page under a CSP without 'unsafe-eval' (the admin page) refuses, so it
 * fails whenever its condition is not true at once.
 */
export async function until(page: Page, expression: string, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if ((await page.evaluate(expression)) === true) return true;
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
