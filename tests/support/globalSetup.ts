// Runs once before the suite: creates the test database if missing, migrates it, and fails loudly (never
// skips) when PostgreSQL or Redis is not reachable.
import { Client } from 'pg';
import Redis from 'ioredis';
import knexFactory from 'knex';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from './env';
import { migrationSource } from '../../server/db/migrations';

export default async function globalSetup(): Promise<void> {
  const url = new URL(TEST_DATABASE_URL);
  const dbName = url.pathname.slice(1);
  const adminUrl = new URL(TEST_DATABASE_URL);
  adminUrl.pathname = '/postgres';
  const admin = new Client({ connectionString: adminUrl.toString(), connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(`PostgreSQL is not reachable at ${adminUrl.host} (${(err as Error).message}). Start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`);
  }
  const exists = await admin.query('select 1 from pg_database where datname = $1', [dbName]);
  if (exists.rowCount === 0) await admin.query(`create database "${dbName.replace(/"/g, '')}"`);
  await admin.end();

  const db = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL });
  try {
    await db.migrate.latest({ migrationSource: migrationSource(), tableName: 'knex_migrations' });
  } finally {
    await db.destroy();
  }

  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null });
  redis.on('error', () => undefined); // reported below, once, with how to start Redis
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    throw new Error(`Redis is not reachable at ${TEST_REDIS_URL} (${(err as Error).message}). Start it: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no`);
  } finally {
    redis.disconnect();
  }
}
