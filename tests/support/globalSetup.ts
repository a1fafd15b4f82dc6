// Runs once before the suite (and first, on its own, as `npm test`'s pre-flight): makes sure PostgreSQL, Redis
// and Chromium are there, starting or installing what it can the way `.ci/run` does (the local PostgreSQL
// cluster, a local redis-server, `apt-get install chromium` as root), then creates and migrates the test
// database. What it cannot fix fails the run (never a skip) with one line per missing prerequisite naming
// the command that fixes it.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { Client } from 'pg';
import Redis from 'ioredis';
import knexFactory from 'knex';
import { CHROMIUM_PATH, DEFAULT_CHROMIUM_PATH, TEST_DATABASE_URL, TEST_REDIS_URL } from './env';
import { migrationSource } from '../../server/db/migrations';
import { writeDocumentForTests } from './openapi';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Runs a command quietly; true when it exited 0. */
function tryRun(command: string, args: string[], timeoutMs: number): boolean {
  return spawnSync(command, args, { stdio: 'ignore', timeout: timeoutMs }).status === 0;
}

async function retry<T>(attempt: () => Promise<T>, seconds: number): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(500);
    }
  }
}

function postgresCluster(): string | null {
  try {
    const versions = fs.readdirSync('/etc/postgresql').filter((v) => /^\d+(\.\d+)?$/.test(v));
    return versions.sort((a, b) => Number(a) - Number(b)).pop() ?? null;
  } catch {
    return null;
  }
}

async function connectPostgres(adminUrl: URL): Promise<Client> {
  const client = new Client({ connectionString: adminUrl.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  return client;
}

/** PostgreSQL: connect; when the default local server is down, start the local cluster as `.ci/run` does. */
async function ensurePostgres(): Promise<Client> {
  const adminUrl = new URL(TEST_DATABASE_URL);
  adminUrl.pathname = '/postgres';
  const port = adminUrl.port || '5432';
  try {
    return await connectPostgres(adminUrl);
  } catch (err) {
    const version = postgresCluster();
    const startable = LOOPBACK.has(adminUrl.hostname) && port === '5432' && version !== null && isRoot() && onPath('pg_ctlcluster');
    if (startable && tryRun('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], 60_000)) {
      return retry(() => connectPostgres(adminUrl), 30);
    }
    const fix = version
      ? `pg_ctlcluster --skip-systemctl-redirect ${version} main start`
      : 'apt-get install -y postgresql && pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start';
    throw new Error(`PostgreSQL is not reachable at ${adminUrl.host} (${(err as Error).message}). Start it: ${fix} (or set TEST_DATABASE_URL)`);
  }
}

async function pingRedis(): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000, retryStrategy: () => null });
  // The first socket error says why (ECONNREFUSED …); connect() itself only rejects with "Connection is closed".
  let cause: Error | null = null;
  redis.on('error', (err: Error) => (cause ??= err));
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    throw cause ?? err;
  } finally {
    redis.disconnect();
  }
}

/** Redis: ping; when a local one is down, start redis-server on that port as `.ci/run` does. */
async function ensureRedis(): Promise<void> {
  const url = new URL(TEST_REDIS_URL);
  const port = url.port || '6379';
  const command = `redis-server --daemonize yes --bind 127.0.0.1 --port ${port} --save "" --appendonly no`;
  try {
    await pingRedis();
  } catch (err) {
    // Only the default port: a test pointing at another port wants that port, not a server we start there.
    const startable = LOOPBACK.has(url.hostname) && port === '6379' && onPath('redis-server');
    if (startable && tryRun('redis-server', ['--daemonize', 'yes', '--bind', '127.0.0.1', '--port', port, '--save', '', '--appendonly', 'no'], 10_000)) {
      return retry(pingRedis, 15);
    }
    const fix = onPath('redis-server') ? command : `apt-get install -y redis-server && ${command}`;
    throw new Error(`Redis is not reachable at ${url.host} (${(err as Error).message}). Start it: ${fix} (or set TEST_REDIS_URL)`);
  }
}

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Chromium for the verify-page browser tests: install Debian's package as root when the default path is empty. */
function ensureChromium(): void {
  if (executable(CHROMIUM_PATH)) return;
  if (CHROMIUM_PATH === DEFAULT_CHROMIUM_PATH && isRoot() && onPath('apt-get')) {
    process.stderr.write('Chromium is missing: installing it with apt-get (browser tests)…\n');
    try {
      execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore', timeout: 300_000 });
      execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
        stdio: 'ignore',
        timeout: 600_000,
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    } catch {
      // reported below with the command to run by hand
    }
    if (executable(CHROMIUM_PATH)) return;
  }
  const fix =
    CHROMIUM_PATH === DEFAULT_CHROMIUM_PATH
      ? 'sudo apt-get install -y chromium'
      : `apt-get install -y chromium and unset CHROMIUM_PATH, or point CHROMIUM_PATH at a Chromium binary`;
  throw new Error(`Chromium is not installed at ${CHROMIUM_PATH} (the verify-page browser tests drive it). Install it: ${fix}`);
}

/**
 * Jest's global setup recreates the test database (`fresh`); the pre-flight (`npm test`'s first step, also run
 * by a test while the suite is under way) only creates it when missing and migrates it.
 */
export async function ensurePrerequisites(options: { fresh: boolean }): Promise<void> {
  const problems: string[] = [];
  let admin: Client | null = null;
  try {
    admin = await ensurePostgres();
  } catch (err) {
    problems.push((err as Error).message);
  }
  await ensureRedis().catch((err: Error) => problems.push(err.message));
  try {
    ensureChromium();
  } catch (err) {
    problems.push((err as Error).message);
  }
  if (problems.length > 0) {
    await admin?.end();
    throw new Error(problems.join('\n'));
  }

  // A new database for every run: rows and schema left by an earlier run (or by a migration edited since it
  // was applied there) can never decide this one. Only a database named as a test database is ever dropped.
  const dbName = new URL(TEST_DATABASE_URL).pathname.slice(1);
  if (!/test/i.test(dbName)) {
    await admin!.end();
    throw new Error(`TEST_DATABASE_URL names the database "${dbName}": the suite recreates its database, so its name must contain "test"`);
  }
  const quoted = `"${dbName.replace(/"/g, '')}"`;
  if (options.fresh) await admin!.query(`drop database if exists ${quoted} with (force)`);
  const exists = await admin!.query('select 1 from pg_database where datname = $1', [dbName]);
  if (exists.rowCount === 0) await admin!.query(`create database ${quoted}`);
  await admin!.end();

  const db = knexFactory({ client: 'pg', connection: TEST_DATABASE_URL });
  try {
    await db.migrate.latest({ migrationSource: migrationSource(), tableName: 'knex_migrations' });
  } finally {
    await db.destroy();
  }

  // Built once for the run: every test file's drift check reads it instead of building it again.
  writeDocumentForTests();
}

export default function globalSetup(): Promise<void> {
  return ensurePrerequisites({ fresh: true });
}
