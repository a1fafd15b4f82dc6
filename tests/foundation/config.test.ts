// Configuration: one joi schema; defaults; a bad value stops start-up naming the variable; embedded mode
// generates and keeps its secrets; production refuses to run without explicit secrets.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../server/config';

describe('configuration', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-config-'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('runs embedded with nothing set, using the documented defaults', () => {
    const c = loadConfig({ DATA_DIR: dataDir });
    expect(c).toMatchObject({
      env: 'development',
      mode: 'embedded',
      port: 3000,
      host: '0.0.0.0',
      databaseUrl: null,
      redisUrl: null,
      redisPrefix: 'kya:',
      publicBaseUrl: 'http://localhost:3000',
      signupUrl: 'https://kya.dev/signup',
      trustProxy: false,
      bodyLimit: '100kb',
      dependencyTimeoutMs: 1000,
      groupCommitMs: 0,
      meteredSynchronousCommit: false,
      dbPoolMax: 10,
      shutdownTimeoutMs: 10000,
      tiers: { free: { quota: 20, rps: 2 }, paid: { quota: 10000, rps: 20 }, enterprise: { quota: null, rps: null } },
      demoAccount: true,
    });
    expect(Object.isFrozen(c) && Object.isFrozen(c.tiers.free)).toBe(true);
  });

  it('generates embedded secrets once and reuses them on the next start', () => {
    const first = loadConfig({ DATA_DIR: dataDir });
    const second = loadConfig({ DATA_DIR: dataDir });
    expect(first.serverSecret).toHaveLength(64);
    expect(first.piiKey).toHaveLength(32);
    expect(second.serverSecret).toBe(first.serverSecret);
    expect(second.piiKey.equals(first.piiKey)).toBe(true);
    expect(fs.statSync(path.join(dataDir, 'secrets.json')).mode & 0o077).toBe(0);
  });

  it('switches to external mode with DATABASE_URL', () => {
    const c = loadConfig({ DATA_DIR: dataDir, DATABASE_URL: 'postgres://u@db:5432/kya', REDIS_URL: 'redis://cache:6379/2' });
    expect([c.mode, c.databaseUrl, c.redisUrl]).toEqual(['external', 'postgres://u@db:5432/kya', 'redis://cache:6379/2']);
  });

  it.each([
    ['PORT', 'eighty', 'PORT must be a number'],
    ['DATABASE_URL', 'mysql://db/kya', 'DATABASE_URL must be a valid uri with a scheme matching the postgres|postgresql pattern'],
    ['REDIS_URL', 'localhost:6379', 'REDIS_URL must be a valid uri with a scheme matching the redis|rediss pattern'],
    ['LOG_LEVEL', 'loud', 'LOG_LEVEL must be one of [fatal, error, warn, info, debug, trace, silent]'],
    ['BODY_LIMIT', 'huge', 'BODY_LIMIT must be a size such as 100kb or 1mb'],
    ['REDIS_PREFIX', 'kya prod', 'REDIS_PREFIX may contain only letters, digits, ":", "_" and "-"'],
    ['PII_ENCRYPTION_KEY', 'abc', 'PII_ENCRYPTION_KEY must be 64 hex characters (32 bytes)'],
    ['DEPENDENCY_TIMEOUT_MS', '0', 'DEPENDENCY_TIMEOUT_MS must be greater than or equal to 1'],
    ['QUOTA_FREE', '-5', 'QUOTA_FREE must be greater than or equal to 1'],
    ['DEMO_ACCOUNT', 'maybe', 'DEMO_ACCOUNT must be a boolean'],
  ])('rejects a bad %s with a message naming it', (variable, value, message) => {
    let error: unknown;
    try {
      loadConfig({ DATA_DIR: dataDir, [variable]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as Error).message).toBe(`Invalid configuration: ${message}`);
  });

  it.each([
    ['external', { DATABASE_URL: 'postgres://db/kya' }],
    ['embedded', {}],
  ])('requires explicit secrets in production (%s database), naming the missing ones and generating nothing', (_mode, db) => {
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-prod-'));
    try {
      const cases: Array<[Record<string, string>, string, string]> = [
        [{}, 'SERVER_SECRET and PII_ENCRYPTION_KEY', 'are required'],
        [{ PII_ENCRYPTION_KEY: 'ab'.repeat(32) }, 'SERVER_SECRET', 'is required'],
        [{ SERVER_SECRET: 'x'.repeat(32) }, 'PII_ENCRYPTION_KEY', 'is required'],
      ];
      for (const [secrets, variable, verb] of cases) {
        let error: unknown;
        try {
          loadConfig({ NODE_ENV: 'production', DATA_DIR: fresh, ...db, ...secrets });
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as ConfigError).variable).toBe(variable);
        expect((error as Error).message).toBe(`Invalid configuration: ${variable} ${verb} in production (never generated there)`);
      }
      expect(fs.readdirSync(fresh)).toEqual([]);
      const config = loadConfig({
        NODE_ENV: 'production',
        DATA_DIR: fresh,
        ...db,
        SERVER_SECRET: 'x'.repeat(32),
        PII_ENCRYPTION_KEY: 'ab'.repeat(32),
        DEMO_ACCOUNT: '1',
      });
      expect(config.demoAccount).toBe(false);
    } finally {
      fs.rmSync(fresh, { recursive: true, force: true });
    }
  });

  it('refuses WEB_CONCURRENCY above 1 without shared PostgreSQL and Redis, naming the variable', () => {
    const message = 'Invalid configuration: WEB_CONCURRENCY above 1 needs DATABASE_URL and REDIS_URL (shared state for all workers)';
    expect(() => loadConfig({ DATA_DIR: dataDir, WEB_CONCURRENCY: '2' })).toThrow(message);
    expect(() => loadConfig({ DATA_DIR: dataDir, WEB_CONCURRENCY: '2', DATABASE_URL: 'postgres://localhost/kya' })).toThrow(message);
    expect(
      loadConfig({ DATA_DIR: dataDir, WEB_CONCURRENCY: '2', DATABASE_URL: 'postgres://localhost/kya', REDIS_URL: 'redis://localhost:6379' }).webConcurrency,
    ).toBe(2);
    expect(() => loadConfig({ DATA_DIR: dataDir, WEB_CONCURRENCY: '0' })).toThrow(ConfigError);
  });

  it('requires the Stripe keys when the Stripe KYC provider is chosen', () => {
    expect(() => loadConfig({ DATA_DIR: dataDir, KYC_PROVIDER: 'stripe' })).toThrow(/STRIPE_SECRET_KEY/);
  });

  it('parses TRUST_PROXY as a boolean, a hop count or an address list', () => {
    expect(loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
  });
});
