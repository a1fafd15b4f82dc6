// knex CLI configuration. The server and `npm run migrate` use server/db/knex.ts directly; this file lets
// `npx knex` tooling (migrate:list, migrate:rollback) point at the same database and migrations.
import { loadConfig } from './server/config';
import { migrationSource } from './server/db/migrations';

const config = loadConfig();

module.exports = {
  client: 'pg',
  connection: config.databaseUrl ?? 'postgres://postgres@127.0.0.1:5432/kya',
  migrations: { migrationSource: migrationSource(), tableName: 'knex_migrations' },
};
