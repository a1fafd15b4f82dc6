// External mode end to end: the server refuses a database whose migrations are behind, `npm run migrate`
// applies them, the server then serves on PostgreSQL + Redis, a bad setting stops start-up naming the
// variable, and SIGTERM lets an in-flight request finish before the process exits.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { baseEnv, killStrayServers, run, startServer } from '../support/processes';
import { freePort } from '../support/net';
import { TEST_DATABASE_URL, TEST_PII_KEY, TEST_REDIS_URL, TEST_SERVER_SECRET } from '../support/env';
import { MIGRATIONS_DIR } from '../../server/db/migrations';

const dbUrl = new URL(TEST_DATABASE_URL);
const dbName = `${dbUrl.pathname.slice(1)}_external`;
const externalUrl = Object.assign(new URL(TEST_DATABASE_URL), { pathname: `/${dbName}` }).toString();

async function recreateDatabase() {
  const admin = new Client({ connectionString: Object.assign(new URL(TEST_DATABASE_URL), { pathname: '/postgres' }).toString() });
  await admin.connect();
  try {
    await admin.query(`drop database if exists "${dbName}" with (force)`);
    await admin.query(`create database "${dbName}"`);
  } finally {
    await admin.end();
  }
}

/** The JSON line `npm run migrate` prints (after npm's own banner lines). */
function migrateOutput(stdout: string) {
  const line = stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  return JSON.parse(line ?? 'null');
}

// Each step spawns a real process (tsx start-up ≈ 2 s on a shared 2-core machine).
jest.setTimeout(180_000);

describe('external mode (DATABASE_URL + REDIS_URL)', () => {
  let env: NodeJS.ProcessEnv;
  let base: string;
  let dataDir: string;

  beforeAll(async () => {
    await recreateDatabase();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-external-'));
    env = baseEnv({
      DATABASE_URL: externalUrl,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `kya:test:${crypto.randomBytes(4).toString('hex')}:`,
      SERVER_SECRET: TEST_SERVER_SECRET,
      PII_ENCRYPTION_KEY: TEST_PII_KEY,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
  });
  afterAll(() => {
    killStrayServers();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses to serve a database whose migrations are behind, naming the fix', async () => {
    const server = startServer(env);
    expect(await server.exited).toBe(1);
    expect(server.output()).toMatch(/Database migrations are behind \(\d+ pending: 0001_accounts\.ts, .*\)\. Run `npm run migrate` first\./);
  });

  it('npm run migrate applies every migration once', async () => {
    const files = fs
      .readdirSync(MIGRATIONS_DIR)
      .filter((f) => /^\d{4}_[a-z0-9_]+\.ts$/.test(f))
      .sort();
    const first = await run('npm', ['run', 'migrate'], env);
    expect(first.code).toBe(0);
    expect(migrateOutput(first.stdout)).toEqual({ applied: files, database: 'external' });
    const second = await run('npm', ['run', 'migrate'], env);
    expect(migrateOutput(second.stdout)).toEqual({ applied: [], database: 'external' });
  });

  it('stops start-up on a bad setting with a message naming the variable', async () => {
    for (const [variable, value, message] of [
      ['PORT', 'eighty', 'Invalid configuration: PORT must be a number'],
      ['REDIS_URL', 'http://localhost:6379', 'Invalid configuration: REDIS_URL must be a valid uri with a scheme matching the redis|rediss pattern'],
    ]) {
      const server = startServer({ ...env, [variable]: value });
      expect(await server.exited).toBe(1);
      expect(server.output()).toContain(message);
    }
  });

  it('serves once migrated (no demo account in external mode) and drains an in-flight request on SIGTERM', async () => {
    const server = startServer(env);
    try {
      await server.waitFor(/kya identity server listening/);
      expect(server.output()).not.toMatch(/as_live_/);
      expect((await request(base).get('/healthz')).body).toEqual({ status: 'ok' });
      expect((await request(base).get('/readyz')).body).toEqual({
        status: 'ready',
        checks: { database: 'ok', redis: 'ok' },
        failed: [],
        sanctions: expect.any(Object),
      });

      // An in-flight request: headers sent, body still arriving when SIGTERM comes.
      const body = JSON.stringify({ padding: 'x'.repeat(1000) });
      let whileDraining = '';
      const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(
          `${base}/v1/not-a-route`,
          { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
          (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode!, body: text }));
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, 500));
        setTimeout(() => {
          server.kill('SIGTERM');
          setTimeout(() => {
            // Not accepting any more: a new connection is refused while the old request is still open.
            void fetch(`${base}/healthz`)
              .then(
                () => 'accepted',
                () => 'refused',
              )
              .then((outcome) => {
                whileDraining = outcome;
                req.end(body.slice(500));
              });
          }, 400);
        }, 200);
      });
      const res = await response;
      expect(whileDraining).toBe('refused');
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body)).toEqual({ error: { code: 'not_found', message: 'No route for POST /v1/not-a-route' } });
    } finally {
      server.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    expect(server.output()).toMatch(/"msg":"shutting down"[\s\S]*"msg":"stopped"/);
  });

  it('runs WEB_CONCURRENCY workers on one port behind a supervisor, and stops them all on SIGTERM', async () => {
    const server = startServer({ ...env, WEB_CONCURRENCY: '2' });
    try {
      await server.waitFor(/kya identity server listening[\s\S]*kya identity server listening/);
      const workerPids = new Set(
        server
          .output()
          .split('\n')
          .filter((l) => l.includes('kya identity server listening'))
          .map((l) => JSON.parse(l).pid as number),
      );
      expect(workerPids.size).toBe(2);
      expect(workerPids.has(server.child.pid!)).toBe(false);
      for (let i = 0; i < 10; i++) expect((await request(base).get('/healthz')).status).toBe(200);
    } finally {
      server.kill('SIGTERM');
    }
    expect(await server.exited).toBe(0);
    expect(server.output().match(/"msg":"stopped"/g)).toHaveLength(2);
  });
});
