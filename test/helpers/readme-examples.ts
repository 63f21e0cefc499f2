import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export interface Example {
  command: string;
  expected: string;
}

/** The `$ command` / output pairs of the README's console block between `<!-- NAME:start -->` and `<!-- NAME:end -->`. */
export function readmeExamples(name: string): Example[] {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const block = new RegExp(`<!-- ${name}:start -->\\s*\`\`\`console\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${name}:end -->`).exec(
    readme,
  )?.[1];
  assert.ok(block, `README has no ${name} block`);
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
