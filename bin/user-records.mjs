#!/usr/bin/env node
// `user-records`, the package's command: runs src/cli.ts through tsx (a dependency), so it works
// right after `npm install`, with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
