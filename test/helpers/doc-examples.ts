import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export interface Example {
  command: string;
  expected: string;
}

/**
 * The `$ command` / output pairs of the console block between `<!-- NAME:start -->` and
 * `<!-- NAME:end -->` in `file` (from the repository's root: README.md, docs/api.md, docs/cli.md).
 */
export function docExamples(file: string, name: string): Example[] {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
  const block = new RegExp(`<!-- ${name}:start -->\\s*\`\`\`console\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${name}:end -->`).exec(
    text,
  )?.[1];
  assert.ok(block, `${file} has no ${name} block`);
  const examples: Example[] = [];
  for (const line of block.trimEnd().split('\n')) {
    if (line.startsWith('$ ')) examples.push({ command: line.slice(2), expected: '' });
    else {
      const last = examples.at(-1);
      assert.ok(last, `output before any command: ${line}`);
      last.expected += `${line}\n`;
    }
  }
  return examples;
}
