// Builds the one knex instance: PostgreSQL via DATABASE_URL, or PGlite (real Postgres in-process, files under
// DATA_DIR) when no database is configured. Both run the same migrations and the same SQL.
import path from 'node:path';
import fs from 'node:fs';
import knexFactory, { Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config';
import { migrationSource } from './migrations';
import { lockDataDir } from './lock';
import type { Logger } from '../logger';

// int8 (count(*), bigserial) as JS numbers: our counters stay far below 2^53.
pg.types.setTypeParser(20, (value: string) => Number(value));
// numeric as number (scores, confidences).
pg.types.setTypeParser(1700, (value: string) => Number(value));

export type Db = Knex;

export interface DbOptions {
  /** Called when a pooled connection errors while idle (e.g. Postgres restarted); must not throw. */
  onConnectionError?: (err: Error) => void;
  /**
   * Skip the per-statement time bounds. Only for `npm run migrate`: a migration may legitimately run for
   * minutes (an index on a large table), whereas request-path queries must fail fast. Default false.
   */
  unbounded?: boolean;
  /** Where knex's own warnings go (e.g. "Acquire connection error"); default: knex prints to the console. */
  logger?: Pick<Logger, 'warn' | 'error' | 'debug'>;
}

function knexLog(logger: DbOptions['logger']): Knex.Config['log'] | undefined {
  if (!logger) return undefined;
  return {
    warn: (message: unknown) => logger.warn({ knex: String(message) }, 'database warning'),
    error: (message: unknown) => logger.error({ knex: String(message) }, 'database error'),
    deprecate: (method: string, alternative: string) => logger.debug({ method, alternative }, 'knex deprecation'),
    debug: () => undefined,
  };
}

export function createDb(config: Config, options: DbOptions = {}): Db {
  if (config.databaseUrl) {
    const timeout = config.dependencyTimeoutMs;
    // Bounded waits: no request hangs on a dead or hung database (503 api_error instead). Postgres cancels
    // a slow statement itself slightly before the client gives up on a server that stopped answering.
    const bounds = options.unbounded
      ? {}
      : { statement_timeout: Math.max(timeout - 100, 100), query_timeout: timeout };
    return knexFactory({
      client: 'pg',
      connection: {
        connectionString: config.databaseUrl,
        connectionTimeoutMillis: Math.min(timeout, 1000),
        ...bounds,
        keepAlive: true,
      } as Knex.PgConnectionConfig,
      acquireConnectionTimeout: timeout,
      log: knexLog(options.logger),
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
  const release = lockDataDir(config.dataDir);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ClientPGLite = require('knex-pglite');
  const db = knexFactory({ client: ClientPGLite, dialect: 'postgres', connection: { filename: dir }, log: knexLog(options.logger) } as Knex.Config);
  // Closing the database hands the directory to the next process (the CLI, or the next start). knex's own
  // `destroy` is read-only; it delegates to the client's, which is an ordinary method.
  const client = db.client as { destroy: (callback?: unknown) => Promise<void> };
  const destroy = client.destroy.bind(client);
  client.destroy = (callback?: unknown) => destroy(callback).finally(release);
  return db;
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
