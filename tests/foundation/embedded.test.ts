// Embedded mode, end to end: `npx tsx server/main.ts` with no DATABASE_URL/REDIS_URL on an empty data
// directory migrates PGlite, prints a demo API key once and serves; a second start reuses the data and prints
// no new key; the admin CLI works on the same directory, through the server's admin channel while it runs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { admin, baseEnv, killStrayServers, startServer } from '../support/processes';
import { freePort } from '../support/net';

const KEY = /as_live_[0-9A-Za-z]{43}/g;

// Each step spawns a real process (tsx start-up ≈ 2 s on a shared 2-core machine).
jest.setTimeout(180_000);

describe('embedded mode (npm start on a bare machine)', () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let base: string;
  let demoKey: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-embedded-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = baseEnv({ NODE_ENV: 'development', DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' });
  });
  afterAll(() => {
    killStrayServers();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('first start on an empty directory: migrates, prints the demo key once, serves healthz and authenticated calls', async () => {
    const server = startServer(env);
    try {
      await server.waitFor(/kya identity server listening/);
      const keys: string[] = server.output().match(KEY) ?? [];
      expect(keys).toHaveLength(1);
      demoKey = keys[0];
      expect(server.output()).toContain('Its API key is shown ONCE');

      expect((await request(base).get('/healthz')).body).toEqual({ status: 'ok' });
      expect((await request(base).get('/readyz')).body).toEqual({ status: 'ready', checks: { database: 'ok' }, failed: [], sanctions: expect.any(Object) });

      const authed = await request(base).get('/v1/credentials').set('X-API-Key', demoKey);
      expect(authed.status).toBe(200);
      expect(authed.headers['x-ratelimit-limit']).toBe('20'); // the demo merchant is on the Paid tier
      const session = await request(base).post('/v1/sessions').set('X-API-Key', demoKey).send({ product_name: 'Demo' });
      expect(session.status).toBe(200);
      expect([session.headers['x-quota-limit'], session.headers['x-quota-used']]).toEqual(['10000', '1']);
      const anonymous = await request(base).get('/v1/credentials');
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.error.code).toBe('signup_required');

      // PGlite is single-process: while the server holds the directory, the CLI runs through its admin channel.
      const listed = await admin(['account', 'list'], env);
      expect(listed.code).toBe(0);
      expect(listed.json.accounts.map((a: { name: string }) => a.name)).toEqual(['Demo Merchant']);
    } finally {
      server.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'pglite'))).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'kya.lock'))).toBe(false);
  });

  it('second start on the same directory reuses the data and prints no new key', async () => {
    const server = startServer(env);
    try {
      await server.waitFor(/kya identity server listening/);
      expect(server.output()).not.toMatch(KEY);
      expect(server.output()).not.toContain('demo merchant created');
      expect((await request(base).get('/v1/credentials').set('X-API-Key', demoKey)).status).toBe(200);
      // The quota count written behind before the first shutdown is still there.
      const session = await request(base).post('/v1/sessions').set('X-API-Key', demoKey).send({});
      expect(session.headers['x-quota-used']).toBe('2');
    } finally {
      server.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
  });

  it('the admin CLI works on the embedded database once the server is stopped', async () => {
    const list = await admin(['account', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.json.accounts).toEqual([expect.objectContaining({ name: 'Demo Merchant', display_name: 'Demo Merchant', tier: 'paid', status: 'active' })]);
    const created = await admin(['account', 'create', '--name', 'Second', '--tier', 'free'], env);
    expect(created.code).toBe(0);
    expect(created.json.api_key).toMatch(/^as_live_/);
  });
});
