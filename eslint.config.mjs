// ESLint: typescript-eslint's type-aware recommended rules over the whole tree (`npm run lint`; CI runs it
// after the type check). Formatting is Prettier's job (`npm run format`), so no stylistic rules here.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // tests/openapi/client is compiled on its own by its test (the tsconfig excludes it too).
  { ignores: ['node_modules/', 'dist/', 'coverage/', 'data/', 'test-output/', 'tests/openapi/client/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A leading underscore marks a parameter or binding that is deliberately unused (Express's 4-argument
      // error handler, interface methods that ignore an argument, omit-by-destructuring).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // In-memory stores implement async interfaces without awaiting anything; `async` keeps a thrown error a
      // rejection, which is what callers of the interface handle.
      '@typescript-eslint/require-await': 'off',
      // Passing on a caught `unknown` (a rethrow through a promise) is forwarding, not inventing, an error.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    // Plain JavaScript config files sit outside tsconfig: lint them without type information.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { module: 'readonly', require: 'readonly', __dirname: 'readonly' } },
  },
  {
    // Test files assert on untyped wire data — supertest's `res.body`, raw knex rows, JSON.parse of logs,
    // framework objects handed to gate callbacks — whose shape is what expect() checks; typing every probe
    // would only restate the assertion. Helpers under tests/ (support, fixtures, bench) stay fully checked.
    files: ['tests/**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
