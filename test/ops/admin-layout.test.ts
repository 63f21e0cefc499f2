import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserSuite, needsChromium, watchedPage } from '../helpers/browser.ts';

/**
 * No control of the admin page is clipped or leaves the window, at a phone's width and a laptop's,
 * and the page never scrolls sideways. Layout does not depend on the store: SQLite only.
 */

const WAIT_MS = 20_000;
const WIDTHS = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
];

/**
 * Every visible select, input and button whose content is wider than its box, or that reaches
 * past the window's sides; and how far the page itself is wider than the window. A select draws
 * its chosen option itself (its scrollWidth is its box), so its text is measured with its font,
 * beside its padding and the arrow Chromium draws (20 px); each option of it is tried in turn.
 */
const MEASURE = `(() => {
  const faults = [];
  const canvas = document.createElement('canvas').getContext('2d');
  const name = (el) => el.id || el.getAttribute('aria-label') || el.textContent.trim() || el.outerHTML.slice(0, 60);
  for (const el of document.querySelectorAll('select, input, button')) {
    if (el.getClientRects().length === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    // A visually hidden control (1 px, clipped) is there for assistive technology only.
    if (el.closest('.empty, .visually-hidden') !== null) continue;
    const box = el.getBoundingClientRect();
    if (box.left < 0 || box.right > window.innerWidth + 0.5)
      faults.push(name(el) + ': from ' + Math.round(box.left) + ' to ' + Math.round(box.right) + ' px, the window is ' + window.innerWidth);
    if (el.scrollWidth > el.clientWidth) faults.push(name(el) + ': content ' + el.scrollWidth + ' px in ' + el.clientWidth);
    if (el.tagName === 'SELECT') {
      const style = getComputedStyle(el);
      canvas.font = style.font;
      const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20;
      for (const option of el.options) {
        const text = canvas.measureText(option.text).width;
        if (text > room) faults.push(name(el) + ': "' + option.text + '" is ' + Math.ceil(text) + ' px in ' + Math.floor(room));
      }
    }
  }
  return { faults, sideways: document.documentElement.scrollWidth - window.innerWidth };
})()`;

/** Ada's row (at a phone's width a card, whose cells' names start with their labels). */
const ada = (page: Page) => page.locator('tr[data-id]').filter({ hasText: 'Ada Lovelace' });

async function measure(page: Page, what: string): Promise<void> {
  const { faults, sideways } = (await page.evaluate(MEASURE)) as { faults: string[]; sideways: number };
  assert.deepEqual(faults, [], `${what}: clipped or outside the window`);
  assert.ok(sideways <= 0, `${what}: the page scrolls ${sideways} px sideways`);
}

describe('/admin has no clipped control at a phone’s width or a laptop’s', () => {
  const suite = browserSuite(
    { RATE_LIMIT: 'off' },
    {
      seed: async (running) => {
        for (const [name, age, city] of [
          ['Katherine Johnson', 101, 'White Sulphur Springs'],
          ['Ada Lovelace', 36, 'London'],
        ] as const) {
          const query = new URLSearchParams({ name, age: String(age), city });
          assert.equal((await running.app.inject({ method: 'POST', url: `/users?${query}` })).statusCode, 200);
        }
      },
    },
  );
  const { watch } = suite;

  for (const size of WIDTHS) {
    it(`at ${size.width} px: the page, an edit, a filter's error, a delete's confirmation`, async (t) => {
      if (!needsChromium(t)) return;
      const { running, browser } = suite.ready();
      const page = await watchedPage(browser.context, watch);
      await page.setViewportSize(size);
      await page.goto(`${running.url}/admin`);
      await page.getByText('Live: changes appear as they happen').waitFor({ timeout: WAIT_MS });
      await ada(page).waitFor({ timeout: WAIT_MS });
      await measure(page, 'the page as it opens');

      await page.getByRole('button', { name: /^Edit record \d+, Ada Lovelace/ }).click();
      await page.getByRole('button', { name: 'Cancel edit' }).waitFor({ timeout: WAIT_MS });
      await measure(page, 'editing a record');
      await page.getByRole('button', { name: 'Cancel edit' }).click();

      await page.getByLabel('Age is').fill('old');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.locator('#filter-age-error').waitFor({ timeout: WAIT_MS });
      await measure(page, 'a filter refused');
      await page.getByRole('button', { name: 'Clear' }).click();

      await page.getByRole('button', { name: /^Delete record \d+, Ada Lovelace/ }).click();
      const dialog = page.getByRole('alertdialog', { name: 'Delete this record?' });
      await measure(page, 'the delete dialog');
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByRole('button', { name: /^Undo/ }).waitFor({ timeout: WAIT_MS });
      await measure(page, 'the confirmation of a delete');
      await page.getByRole('button', { name: /^Undo/ }).click();
      await ada(page).waitFor({ timeout: WAIT_MS });
      await page.close();
    });
  }

  it('made no request to another host and logged no error', (t) => {
    if (!needsChromium(t)) return;
    assert.deepEqual(watch.leaked, []);
    assert.deepEqual(watch.errors, []);
  });
});
