// Test harness: builds real deps (PostgreSQL + Redis) with an isolated Redis key prefix per harness, an
// injectable clock, helpers to reset tables and to create merchant accounts.
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import { loadConfig, type Config } from '../../server/config';
import { createDeps, type Clock, type Deps, type DepsOverrides } from '../../server/deps';
import { createApp } from '../../server/app';
import { createLogger } from '../../server/logger';
import { checkResponsesOf } from './driftHook';
import type { Tier } from '../../shared/types';
import { TEST_DATABASE_URL, TEST_PII_KEY, TEST_REDIS_URL, TEST_SERVER_SECRET } from './env';

export class TestClock implements Clock {
  constructor(private current: Date = new Date()) {}
  now() {
    return new Date(this.current);
  }
  set(value: Date | string) {
    this.current = new Date(value);
  }
  advance(ms: number) {
    this.current = new Date(this.current.getTime() + ms);
  }
}

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    SERVER_SECRET: TEST_SERVER_SECRET,
    PII_ENCRYPTION_KEY: TEST_PII_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: path.join(os.tmpdir(), 'kya-test-data'),
    PUBLIC_BASE_URL: 'http://kya.test',
    // A five-entry name list, so every test file does not parse and index the full bundled OFAC list; tests
    // of the bundled default pass SANCTIONS_NAME_SOURCE: undefined.
    SANCTIONS_NAME_SOURCE: path.join(__dirname, '../fixtures/screening/SDN.CSV'),
    SANCTIONS_NAME_ALT_SOURCE: path.join(__dirname, '../fixtures/screening/ALT.CSV'),
    // Slack for test set-up statements (TRUNCATE … CASCADE) on a loaded shared machine; the failure-table
    // tests use the production default (1000 ms) explicitly.
    DEPENDENCY_TIMEOUT_MS: '1500',
    ...env,
  });
}

export interface Harness {
  deps: Deps;
  app: Express;
  prefix: string;
  close(): Promise<void>;
}

/** Real deps + app. `env` overrides config variables; `redisPrefix` lets two harnesses share counters. */
export async function createHarness(
  options: { env?: Record<string, string | undefined>; overrides?: DepsOverrides; redisPrefix?: string } = {},
): Promise<Harness> {
  const config = testConfig(options.env);
  const prefix = options.redisPrefix ?? `kya:test:${crypto.randomBytes(6).toString('hex')}:`;
  const deps = await createDeps(config, { logger: createLogger(config.logLevel), redisPrefix: prefix, ...options.overrides });
  await deps.lifecycle.start();
  const app = createApp(deps);
  checkResponsesOf(app);
  return { deps, app, prefix, close: () => deps.lifecycle.stop() };
}

/**
 * Empties tables (and whatever references them). A harness's background workers (webhook deliveries, scoring)
 * may still be writing the previous test's rows, and TRUNCATE's locks on many tables can then deadlock with
 * them: PostgreSQL aborts one side (40P01), and the truncate is simply tried again.
 */
export async function resetTables(deps: Deps, tables: string[] = ['accounts']): Promise<void> {
  const sql = `truncate ${tables.map((t) => `"${t}"`).join(', ')} restart identity cascade`;
  for (let attempt = 1; ; attempt++) {
    try {
      await deps.db.raw(sql);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
    }
  }
}

export async function createMerchant(deps: Deps, options: { tier?: Tier; quota?: number; rps?: number; name?: string; displayName?: string } = {}) {
  const { account, apiKey } = await deps.services.accounts.create({
    name: options.name ?? 'Test Merchant',
    tier: options.tier ?? 'paid',
    quota: options.quota,
    rps: options.rps,
    displayName: options.displayName,
  });
  return { accountId: account.id, apiKey };
}

/**
 * The usual per-file setup in one call: a harness on a TestClock, created before all tests, the clock reset to
 * `start` and `tables` emptied before each test, closed after all. Returns a stable Harness that delegates to
 * the live one, so test bodies and helpers use `h` as usual.
 */
export function useClockedHarness(start: string, tables: string[]): { h: Harness; clock: TestClock } {
  const clock = new TestClock(new Date(start));
  let current: Harness | undefined;
  const live = () => {
    if (!current) throw new Error('the harness is only available inside tests and hooks');
    return current;
  };
  const h: Harness = {
    get deps() {
      return live().deps;
    },
    get app() {
      return live().app;
    },
    get prefix() {
      return live().prefix;
    },
    close: () => live().close(),
  };
  beforeAll(async () => {
    current = await createHarness({ overrides: { clock } });
  });
  beforeEach(async () => {
    clock.set(start);
    await resetTables(live().deps, tables);
  });
  afterAll(() => current?.close());
  return { h, clock };
}
