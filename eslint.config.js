// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rule of src/ (docs/architecture.md): each folder may import only the folders below it.
 * From the top: the entry points, server.ts, serve.ts, cluster.ts and cli.ts with cli/ (the
 * operator's commands); app.ts; users/ and ops/ (side by side, neither imports the other); http/;
 * store/ and logs/; config/ at the bottom.
 */
const LAYERS = {
  'src/config/**': ['logs', 'store', 'http', 'users', 'ops', 'cli'],
  'src/logs/**': ['store', 'http', 'users', 'ops', 'cli'],
  'src/store/**': ['logs', 'http', 'users', 'ops', 'cli'],
  'src/http/**': ['users', 'ops', 'cli'],
  'src/users/**': ['ops', 'cli'],
  'src/ops/**': ['users', 'cli'],
};
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
            message: `${files.slice(4, -3)}/ may not import ${above.join('/, ')}/ or the entry points (docs/architecture.md)`,
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
