// Production never behaves like a demo: `NODE_ENV=production node server/main.ts` refuses to start without
// explicit SERVER_SECRET and PII_ENCRYPTION_KEY (naming the missing ones, writing nothing), in either database
// mode; with them it serves without creating a demo merchant or printing an API key.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { baseEnv, killStrayServers, startServer } from '../support/processes';
import { freePort } from '../support/net';
import { TEST_DATABASE_URL } from '../support/env';

jest.setTimeout(180_000);

const SECRETS = { SERVER_SECRET: 'p'.repeat(40), PII_ENCRYPTION_KEY: 'cd'.repeat(32) };

describe('production start-up', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-production-'));
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  afterAll(() => killStrayServers());

  async function env(extra: Record<string, string> = {}) {
    return baseEnv({ NODE_ENV: 'production', DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...extra });
  }

  it.each([
    ['embedded', {}],
    ['external', { DATABASE_URL: TEST_DATABASE_URL }],
  ])('refuses to start without the secrets (%s database), naming both, generating and creating nothing', async (_mode, db) => {
    const server = startServer(await env(db));
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain('Invalid configuration: SERVER_SECRET and PII_ENCRYPTION_KEY are required in production (never generated there)');
    expect(server.output()).not.toMatch(/as_live_/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it('names the one secret that is missing', async () => {
    const server = startServer(await env({ SERVER_SECRET: SECRETS.SERVER_SECRET }));
    expect(await server.exited).toBe(1);
    expect(server.output()).toContain('Invalid configuration: PII_ENCRYPTION_KEY is required in production (never generated there)');
  });

  it('with explicit secrets on an empty embedded database: serves, creates no demo merchant and prints no key', async () => {
    const e = await env({ ...SECRETS, DEMO_ACCOUNT: '1' });
    const server = startServer(e);
    try {
      await server.waitFor(/kya identity server listening/);
      expect((await request(`http://127.0.0.1:${e.PORT}`).get('/healthz')).status).toBe(200);
      expect(server.output()).not.toMatch(/as_live_|demo merchant|API key/i);
      expect(fs.existsSync(path.join(dataDir, 'secrets.json'))).toBe(false);
    } finally {
      server.kill();
      await server.exited;
    }
    expect(server.output()).not.toMatch(/as_live_/);
  });
});
