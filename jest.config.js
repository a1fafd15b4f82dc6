// jest + swc (type-stripping only; `npm run typecheck` runs tsc). Tests run against real PostgreSQL and
// Redis; globalSetup creates and migrates the test database.
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  globalSetup: '<rootDir>/tests/support/globalSetup.ts',
  testTimeout: 30000,
  maxWorkers: 1,
};
