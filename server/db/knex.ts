// Builds the one knex instance: PostgreSQL via DATABASE_URL, or PGlite (real Postgres in-process, files under
// DATA_DIR) when no database is configured. Both run the same migrations and the same SQL.
import path from 'node:path';
import fs from 'node:fs';
import knexFactory, { Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config';
import { migrationSource } from './migrations';

// int8 (count(*), bigserial) as JS numbers: our counters stay far below 2^53.
pg.types.setTypeParser(20, (value: string) => Number(value));
// numeric as number (scores, confidences).
pg.types.setTypeParser(1700, (value: string) => Number(value));

export type Db = Knex;

export interface DbOptions {
  /** Called when a pooled connection errors while idle (e.g. Postgres restarted); must not throw. */
  onConnectionError?: (err: Error) => void;
}

export function createDb(config: Config, options: DbOptions = {}): Db {
  if (config.databaseUrl) {
    const timeout = config.dependencyTimeoutMs;
    return knexFactory({
      client: 'pg',
      connection: {
        connectionString: config.databaseUrl,
        // Bounded waits: no request hangs on a dead or hung database (503 api_error instead).
        connectionTimeoutMillis: Math.min(timeout, 1000),
        statement_timeout: timeout,
        query_timeout: timeout + 250,
        keepAlive: true,
      } as Knex.PgConnectionConfig,
      acquireConnectionTimeout: timeout,
      pool: {
        min: 0,
        max: config.dbPoolMax,
        idleTimeoutMillis: 30_000,
        // A dropped connection emits 'error' on the client; without a listener it would kill the process.
        afterCreate(conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) {
          conn.on('error', (err) => options.onConnectionError?.(err));
          done(null, conn);
        },
      },
    });
  }
  const dir = path.join(config.dataDir, 'pglite');
  fs.mkdirSync(dir, { recursive: true });
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ClientPGLite = require('knex-pglite');
  return knexFactory({ client: ClientPGLite, dialect: 'postgres', connection: { filename: dir } } as Knex.Config);
}

export function migrationConfig(): Knex.MigratorConfig {
  return { migrationSource: migrationSource(), tableName: 'knex_migrations' };
}

/** Names of migrations present in the code but not yet applied to this database. */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const [, pending] = (await db.migrate.list(migrationConfig())) as [unknown[], Array<{ file: string } | string>];
  return pending.map((m) => (typeof m === 'string' ? m : m.file));
}

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = await db.migrate.latest(migrationConfig());
  return applied as string[];
}
