// `npm test`'s pre-flight (tests/support/prepare.ts): each missing prerequisite fails the run in one line
// naming the command that fixes it; a complete machine passes. Prerequisites are "removed" by pointing the
// pre-flight at ports nothing listens on and at a Chromium path that does not exist (nothing is started or
// installed for a non-default address: the fix is named instead).
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, baseEnv, run } from '../support/processes';
import { freePort } from '../support/net';
import { CHROMIUM_PATH, TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';

jest.setTimeout(60_000);

const TSX = path.join(ROOT, 'node_modules/.bin/tsx');

const prepare = (env: Record<string, string>) =>
  run(TSX, ['tests/support/prepare.ts'], baseEnv({ TMPDIR: process.env.TMPDIR, TEST_DATABASE_URL, TEST_REDIS_URL, CHROMIUM_PATH, ...env }));

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

describe('npm test pre-flight', () => {
  test('a machine with PostgreSQL, Redis and Chromium passes and names what it found', async () => {
    const r = await prepare({});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const db = new URL(TEST_DATABASE_URL);
    expect(r.stdout).toBe(`test prerequisites ready: PostgreSQL ${db.host}${db.pathname}, Redis ${new URL(TEST_REDIS_URL).host}, Chromium ${CHROMIUM_PATH}\n`);
  });

  test('PostgreSQL that does not answer: one line naming how to start the cluster', async () => {
    const port = await freePort();
    const r = await prepare({ TEST_DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/kya_test` });
    expect(r.code).toBe(1);
    const version = fs.readdirSync('/etc/postgresql').sort().pop();
    expect(lines(r.stderr)).toEqual([
      `npm test cannot run: PostgreSQL is not reachable at 127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}). Start it: pg_ctlcluster --skip-systemctl-redirect ${version} main start (or set TEST_DATABASE_URL)`,
    ]);
  });

  test('Redis that does not answer: one line naming the redis-server command for that port', async () => {
    const port = await freePort();
    const r = await prepare({ TEST_REDIS_URL: `redis://127.0.0.1:${port}/0` });
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([
      `npm test cannot run: Redis is not reachable at 127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}). Start it: redis-server --daemonize yes --bind 127.0.0.1 --port ${port} --save "" --appendonly no (or set TEST_REDIS_URL)`,
    ]);
  });

  test('Chromium missing at a configured path: one line naming the install command', async () => {
    const missing = path.join(process.env.TMPDIR ?? '/tmp', 'no-such-dir', 'chromium');
    const r = await prepare({ CHROMIUM_PATH: missing });
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([
      `npm test cannot run: Chromium is not installed at ${missing} (the verify-page browser tests drive it). Install it: apt-get install -y chromium and unset CHROMIUM_PATH, or point CHROMIUM_PATH at a Chromium binary`,
    ]);
  });

  test('several missing prerequisites: one line each, nothing else', async () => {
    const [pg, redis] = [await freePort(), await freePort()];
    const r = await prepare({
      TEST_DATABASE_URL: `postgres://postgres@127.0.0.1:${pg}/kya_test`,
      TEST_REDIS_URL: `redis://127.0.0.1:${redis}/0`,
      CHROMIUM_PATH: '/nonexistent/chromium',
    });
    expect(r.code).toBe(1);
    expect(lines(r.stderr).map((l) => l.replace(/ \(.*$/, ''))).toEqual([
      `npm test cannot run: PostgreSQL is not reachable at 127.0.0.1:${pg}`,
      `npm test cannot run: Redis is not reachable at 127.0.0.1:${redis}`,
      'npm test cannot run: Chromium is not installed at /nonexistent/chromium',
    ]);
  });
});
