// jest + swc (type-stripping only; `npm run typecheck` runs tsc). Tests run against real PostgreSQL and
// Redis; globalSetup creates and migrates the test database.
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/tests'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  // Inside the repository the gate's package name means its source (the tarball maps it to dist/).
  moduleNameMapper: {
    '^@kya/gate$': '<rootDir>/middleware/index.ts',
    '^@kya/gate/client$': '<rootDir>/middleware/api.ts',
    '^@kya/gate/(express|hono|fastify|next|fetch)$': '<rootDir>/middleware/$1.ts',
  },
  globalSetup: '<rootDir>/tests/support/globalSetup.ts',
  // Every response of the real app is held to the API description (the drift check).
  setupFilesAfterEnv: ['<rootDir>/tests/support/driftHook.ts'],
  testTimeout: 30000,
  maxWorkers: 1,
};
