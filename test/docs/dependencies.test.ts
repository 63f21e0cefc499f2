import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';

// What `npm ci` installs, read from package-lock.json, which records each package's `engines` and
// whether it has an install script. npm warns (EBADENGINE) for a package whose engines leave out the
// running Node. npm 11 still runs every install script, and lists those package.json allowScripts
// does not name; npm 12 runs only the named ones.

type Locked = { version?: string; dev?: boolean; engines?: { node?: string }; hasInstallScript?: boolean };
type Manifest = { engines: { node: string }; allowScripts?: Record<string, boolean> };

const ROOT = new URL('../..', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(new URL('package-lock.json', ROOT), 'utf8')) as {
  packages: Record<string, Locked>;
};
// semver is what npm itself compares engines with (a dependency of fastify's, listed in devDependencies).
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean;
  subset(sub: string, sup: string): boolean;
  intersects(a: string, b: string): boolean;
};

/** Every locked package but the project itself, by the name it is installed under. */
const installed = Object.entries(lock.packages)
  .filter(([path]) => path !== '')
  .map(([path, entry]) => ({ name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), ...entry }));

// The long-term Node lines the README promises and CI runs (.ci/run), each as far as package.json
// engines allows it.
const LINES = ['20', '22', '24'];

describe('what npm ci installs (package-lock.json)', () => {
  it('engines allows exactly the Node lines CI runs, none it does not test', () => {
    const allowed = ['18', '19', '20', '21', '22', '23', '24', '25', '26', '27'].filter((line) =>
      semver.intersects(manifest.engines.node, `${line}.x`),
    );
    assert.deepEqual(allowed, LINES);
  });

  for (const line of LINES) {
    // engines' parts that reach this line, each narrowed to it ("^20.6.0 || ^22.0.0" and 20: "^20.6.0 20.x").
    const range = manifest.engines.node
      .split('||')
      .map((part) => part.trim())
      .filter((part) => semver.intersects(part, `${line}.x`))
      .map((part) => `${part} ${line}.x`)
      .join(' || ');
    it(`every package the service runs with supports every Node ${line} that engines allows (${range})`, () => {
      const narrower = installed
        .filter((entry) => entry.dev !== true && entry.engines?.node !== undefined)
        .filter((entry) => !semver.subset(range, entry.engines?.node ?? '*'))
        .map((entry) => `${entry.name}@${entry.version} wants node ${entry.engines?.node}`);
      assert.deepEqual(narrower, []);
    });
  }

  it(`every package, the development ones too, supports the Node running this (${process.version})`, () => {
    const refusing = installed
      .filter((entry) => entry.engines?.node !== undefined)
      .filter((entry) => !semver.satisfies(process.version, entry.engines?.node ?? '*'))
      .map((entry) => `${entry.name}@${entry.version} wants node ${entry.engines?.node}`);
    assert.deepEqual(refusing, []);
  });

  it('only the packages package.json allowScripts names have install scripts (no telemetry postinstall)', () => {
    const allowed = Object.entries(manifest.allowScripts ?? {})
      .filter(([, allow]) => allow)
      .map(([key]) => key.replace(/(?<=.)@.*$/, ''));
    const scripted = [...new Set(installed.filter((entry) => entry.hasInstallScript === true).map((e) => e.name))];
    assert.deepEqual(scripted.sort(), allowed.sort());
  });
});
