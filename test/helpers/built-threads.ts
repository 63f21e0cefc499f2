// Loaded before every test file by scripts/run-tests.ts: stores the tests open in their own process
// run their SQLite threads from the bundles the runner built from this source, not through tsx.
import { pathToFileURL } from 'node:url';
import { dirname, resolve } from 'node:path';
import { useBuiltThreads } from '../../src/store/sqlite/thread-start.ts';

const bundle = process.env.TEST_SERVER_BUNDLE;
if (bundle !== undefined) useBuiltThreads(pathToFileURL(`${resolve(dirname(bundle))}/`));
