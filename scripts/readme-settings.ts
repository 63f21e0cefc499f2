// The settings table's old command, kept because notes and other branches name it: the table now
// lives in docs/operations.md, and scripts/generate-docs.ts (`npm run docs`) rewrites it with the
// other generated blocks.
import { writeDocBlocks } from './doc-blocks.ts';

console.log(`rewrote: ${writeDocBlocks(['settings']).join(', ') || 'nothing (up to date)'}`);
