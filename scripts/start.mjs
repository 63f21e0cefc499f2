// `npm start`: builds the bundle (scripts/build.mjs), then runs it in this same process. The process
// npm starts is then the service itself, so the SIGTERM or SIGINT npm passes on to it reaches the
// service's own handlers (src/serve.ts: finish what is in flight, close, exit). The script was once
// `npm run build && node dist/server.mjs`: npm signalled the shell between them, and the service,
// the shell's child, went on serving (docs/operations.md#logs-health-and-metrics).
import { pathToFileURL } from 'node:url';
import { stop } from 'esbuild';
import { buildBundle } from './build.mjs';

const BUNDLE = 'dist/server.mjs';
await buildBundle(BUNDLE);
// esbuild's helper process has nothing left to do; it would otherwise live beside the service.
await stop();
// The service reads its flags from process.argv: `npm start -- --port 8080` reaches it as they are.
await import(pathToFileURL(BUNDLE).href);
