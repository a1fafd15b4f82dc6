// Builds the one knex instance: PostgreSQL via DATABASE_URL, or PGlite (real Postgres in-process, files under
// DATA_DIR) when no database is configured. Both run the same migrations and the same SQL.
import path from 'node:path';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import knexFactory, { Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config';
import { migrationSource } from './migrations';
import { lockDataDir } from './lock';
import type { Logger } from '../logger';
import { CircuitBreaker, CircuitOpenError, isPostgresOutage } from '../circuit';

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
  /** Time bound of a statement, instead of DEPENDENCY_TIMEOUT_MS (bulk background writes: the sanctions lists). */
  timeoutMs?: number;
  /** Pool size, instead of DB_POOL_MAX. */
  poolMax?: number;
  /**
   * Bound on opening a connection (default: the statement bound, at most 1 s, so requests fail fast). Background
   * pools give more: a connection opened while this process is busy parsing a list must not time out on it.
   */
  connectTimeoutMs?: number;
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
    const timeout = options.timeoutMs ?? config.dependencyTimeoutMs;
    // Bounded waits: no request hangs on a dead or hung database (503 api_error instead). Postgres cancels
    // a slow statement itself slightly before the client gives up on a server that stopped answering.
    const bounds = options.unbounded ? {} : { statement_timeout: Math.max(timeout - 100, 100), query_timeout: timeout };
    return knexFactory({
      client: 'pg',
      connection: {
        connectionString: config.databaseUrl,
        connectionTimeoutMillis: options.connectTimeoutMs ?? Math.min(timeout, 1000),
        ...bounds,
        keepAlive: true,
      } as Knex.PgConnectionConfig,
      acquireConnectionTimeout: timeout,
      log: knexLog(options.logger),
      pool: {
        min: 0,
        max: options.poolMax ?? config.dbPoolMax,
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
  initPgliteDir(dir);
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only in embedded mode, so a PostgreSQL deployment never loads PGlite
  const ClientPGLite = require('knex-pglite') as NonNullable<Knex.Config['client']>;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- as above: embedded mode only
  const { PGlite } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
  const pglite = new PGlite({ dataDir: dir, postgresqlconf: PGLITE_CONF });
  const db = knexFactory({ client: ClientPGLite, dialect: 'postgres', connection: { pglite }, log: knexLog(options.logger) } as Knex.Config);
  // Closing the database hands the directory to the next process (the CLI, or the next start). knex's own
  // `destroy` is read-only; it delegates to the client's, which is an ordinary method.
  const client = db.client as { destroy: (callback?: unknown) => Promise<void> };
  const destroy = client.destroy.bind(client);
  client.destroy = (callback?: unknown) => destroy(callback).finally(release);
  return db;
}

/**
 * Embedded Postgres settings. PGlite serves one process with one connection, so Postgres' server defaults
 * (128 MB of shared buffers sized for many backends) only inflate the WebAssembly heap, which never shrinks:
 * 16 MB of buffers holds this service's hot rows (accounts, keys, credentials) many times over.
 */
const PGLITE_CONF = ['shared_buffers=16MB', 'wal_buffers=1MB', 'temp_buffers=2MB', 'work_mem=2MB', 'maintenance_work_mem=16MB'];

/**
 * Creates a new PGlite data directory (initdb) in a short-lived child process. initdb grows the WebAssembly
 * heap to several hundred MB, and a WebAssembly heap is never returned to the system: done in-process, the
 * server would keep that memory for its whole life. Existing directories are opened directly.
 */
function initPgliteDir(dir: string): void {
  if (fs.existsSync(path.join(dir, 'PG_VERSION'))) return;
  const script = `const { PGlite } = require(process.argv[1]); const db = new PGlite(process.argv[2]); db.waitReady.then(() => db.close()).catch((e) => { console.error(e && e.message); process.exit(1); });`;
  const result = spawnSync(process.execPath, ['-e', script, require.resolve('@electric-sql/pglite'), dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`could not create the embedded database in ${dir}: ${result.stderr?.trim() || `exit ${result.status}`}`);
}

/** While PostgreSQL is out, probed with `select 1` on a fresh connection (the pool's may be stuck on a hung server). */
export function postgresCircuit(config: Config, logger: CircuitLogger): CircuitBreaker {
  const timeout = Math.min(config.dependencyTimeoutMs, 500);
  return new CircuitBreaker({
    name: 'postgres',
    trips: isPostgresOutage,
    probeIntervalMs: 100,
    probeTimeoutMs: timeout,
    logger,
    probe: async () => {
      const client = new pg.Client({ connectionString: config.databaseUrl!, connectionTimeoutMillis: timeout, query_timeout: timeout });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('select 1');
      } finally {
        client.end().catch(() => undefined);
      }
    },
  });
}
type CircuitLogger = ConstructorParameters<typeof CircuitBreaker>[0]['logger'];

interface KnexClientInternals {
  acquireConnection(): Promise<PooledConnection>;
  query(connection: PooledConnection, obj: unknown): Promise<unknown>;
  releaseConnection(connection: PooledConnection): Promise<void>;
}
type PooledConnection = { __knex__disposed?: unknown };

/**
 * Puts every statement of this knex instance behind the circuit: while open, acquiring a connection fails at
 * once (503 api_error without waiting); an outage-like failure of a statement or of acquiring opens it. A
 * connection whose statement timed out is retired, so the pool never hands out a socket stuck on a hung server.
 */
export function guardWithCircuit(db: Db, circuit: CircuitBreaker): void {
  const client = db.client as unknown as KnexClientInternals;
  const acquire = client.acquireConnection.bind(client);
  const query = client.query.bind(client);
  client.acquireConnection = () => {
    let acquiring: Promise<PooledConnection> | null = null;
    return circuit
      .run(() => (acquiring = acquire()))
      .catch((err: unknown) => {
        // Given up on while still waiting for the pool: hand the connection back once it arrives.
        acquiring?.then(
          (connection) => client.releaseConnection(connection),
          () => undefined,
        );
        throw err;
      });
  };
  client.query = (connection, obj) =>
    circuit
      .run(() => query(connection, obj))
      .catch((err: unknown) => {
        // A statement that timed out or was given up on may still hold its connection: never reuse it.
        if (isPostgresOutage(err) || err instanceof CircuitOpenError) connection.__knex__disposed = err;
        throw err;
      });
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
  const [, applied] = (await db.migrate.latest(migrationConfig())) as [number, string[]];
  return applied;
}
