// @ts-check
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rule of src/ (docs/architecture.md): each folder may import only the folders below it.
 * From the top: the entry points, server.ts, serve.ts, cluster.ts and cli.ts with cli/ (the
 * operator's commands); app.ts; changes/ (the event stream and webhooks); users/ and ops/ (side by
 * side, neither imports the other); http/; store/ and logs/; record/ (the record's definition);
 * config/ and shared/ at the bottom (side by side).
 */
const LAYERS = {
  'src/config/**': ['shared', 'record', 'logs', 'store', 'http', 'users', 'ops', 'changes', 'cli'],
  'src/shared/**': ['config', 'record', 'logs', 'store', 'http', 'users', 'ops', 'changes', 'cli'],
  'src/record/**': ['logs', 'store', 'http', 'users', 'ops', 'changes', 'cli'],
  'src/logs/**': ['store', 'http', 'users', 'ops', 'changes', 'cli'],
  'src/store/**': ['logs', 'http', 'users', 'ops', 'changes', 'cli'],
  'src/http/**': ['users', 'ops', 'changes', 'cli'],
  'src/users/**': ['ops', 'changes', 'cli'],
  'src/ops/**': ['users', 'changes', 'cli'],
  'src/changes/**': ['ops', 'cli'],
  'src/cli/**': [],
};
// Every folder of src/ has its place: a new one fails the lint until it is given one here.
const unplaced = readdirSync(new URL('./src', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !(`src/${entry.name}/**` in LAYERS))
  .map((entry) => `src/${entry.name}/`);
if (unplaced.length > 0) {
  throw new Error(`eslint.config.js: LAYERS gives no place to ${unplaced.join(', ')} (see docs/architecture.md)`);
}

const TOP = ['**/app.ts', '**/server.ts', '**/serve.ts', '**/cluster.ts', '**/cli.ts'];

const layerRules = Object.entries(LAYERS).map(([files, above]) => ({
  files: [files],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: [...above.map((folder) => `**/${folder}/**`), ...TOP],
            message: `${files.slice(4, -3)}/ may not import ${[...above.map((folder) => `${folder}/`), 'the entry points'].join(', ')} (docs/architecture.md)`,
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: ['node_modules/', 'data/', 'dist/', '.tmp/', 'bench/results/', 'bench/peers/*/data/', 'client/schema.ts'],
  },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...layerRules,
);
