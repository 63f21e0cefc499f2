// `npm run docs`: rewrites every generated block of the docs (the settings, the problem types, the
// bench's figures) from its source; see scripts/doc-blocks.ts.
import { writeDocBlocks } from './doc-blocks.ts';

const changed = writeDocBlocks();
console.log(changed.length === 0 ? 'docs: every generated block is up to date' : `docs: rewrote ${changed.join(', ')}`);
