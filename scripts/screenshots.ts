// `npm run screenshots`: the README's pictures of the admin page, made again from the page as it is.
// The service runs in this process on a fresh SQLite file with a few records, on 127.0.0.1; Chromium
// (Debian's, as the tests use it) draws the page wide and at phone width, and the edit conflict.
// Writes docs/admin.png, docs/admin-phone.png and docs/admin-conflict.png.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config/load.ts';
import { openDatabase } from '../src/store/database.ts';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/helpers/chromium.ts';

const PEOPLE: Array<[string, number, string]> = [
  ['Ada Lovelace', 36, 'London'],
  ['Alan Turing', 41, 'Wilmslow'],
  ['Grace Hopper', 85, 'Arlington'],
  ['Katherine Johnson', 101, 'Hampton'],
  ['Edsger Dijkstra', 72, 'Nuenen'],
  ['Barbara Liskov', 86, 'Cambridge'],
  ['Donald Knuth', 88, 'Stanford'],
  ['Margaret Hamilton', 90, 'Boston'],
  ['Tim Berners-Lee', 71, 'Oxford'],
  ['Radia Perlman', 75, 'Redmond'],
];

const OUT = new URL('../docs/', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'user-records-screenshots-'));
const config = loadConfig({ DATABASE_URL: join(dir, 'users.db'), LOG_LEVEL: 'silent', RATE_LIMIT: 'off' }, []);
const store = await openDatabase(config).openStore();
const app = await buildApp(config, { store });
const context = await chromium.launchPersistentContext(join(dir, 'profile'), {
  executablePath: CHROMIUM,
  args: CHROMIUM_ARGS,
  viewport: { width: 1100, height: 860 },
});
try {
  for (const [name, age, city] of PEOPLE) await store.create({ name, age, city });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${url}/admin`);
  await page.getByText('Live: changes appear as they happen').waitFor();
  // A change made elsewhere while the page is open, so "Recent changes" shows one.
  await app.inject({ method: 'POST', url: '/users?name=Frances%20Allen&age=88&city=Schenectady' });
  await page.getByRole('cell', { name: 'Frances Allen', exact: true }).waitFor();
  await page.getByText('of 11 matching').waitFor({ timeout: 15_000 });
  await page.screenshot({ path: join(OUT, 'admin.png'), fullPage: true });

  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(OUT, 'admin-phone.png') });

  await page.setViewportSize({ width: 1100, height: 860 });
  await page.getByRole('button', { name: 'Edit record 1, Ada Lovelace' }).click();
  await page.getByRole('heading', { name: 'Edit record #1' }).waitFor();
  await page.getByLabel('City', { exact: true }).fill('Marylebone');
  await app.inject({ method: 'PATCH', url: '/users/1?age=37' });
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('alertdialog', { name: 'Changed by someone else' }).waitFor();
  await page.screenshot({ path: join(OUT, 'admin-conflict.png') });
  console.log(`wrote ${OUT}admin.png, admin-phone.png and admin-conflict.png`);
} finally {
  await context.close();
  await app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
