// The admin CLI end to end: each command is a real `npx tsx server/cli/admin.ts …` process against the test
// PostgreSQL + Redis, printing JSON on stdout; changes reach a running app instance (cache invalidation over
// Redis pub/sub) without a restart.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { createHarness, resetTables, type Harness } from '../support/harness';
import { meteredApp } from '../support/meteredApp';
import { admin, baseEnv } from '../support/processes';
import { eventually } from '../support/eventually';
import { TEST_DATABASE_URL, TEST_PII_KEY, TEST_REDIS_URL, TEST_SERVER_SECRET } from '../support/env';

// Each step spawns a real process (tsx start-up ≈ 2 s on a shared 2-core machine).
jest.setTimeout(180_000);

describe('admin CLI (external mode)', () => {
  let h: Harness;
  let app: Express;
  let env: NodeJS.ProcessEnv;
  let dataDir: string;

  beforeAll(async () => {
    h = await createHarness();
    app = meteredApp(h.deps);
    await resetTables(h.deps, ['accounts']);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-cli-'));
    env = baseEnv({
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: h.prefix, // the running instance listens for invalidations under this prefix
      SERVER_SECRET: TEST_SERVER_SECRET,
      PII_ENCRYPTION_KEY: TEST_PII_KEY,
      DATA_DIR: dataDir,
    });
  });
  afterAll(async () => {
    await h.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const limited = (key: string) => request(app).get('/t/limited').set('X-API-Key', key);

  it('creates, lists, shows, changes, rotates, extends and cancels accounts, printing JSON', async () => {
    // create: prints the id and the key once
    const created = await admin(['account', 'create', '--name', 'Acme Wines', '--tier', 'paid', '--quota', '500', '--rps', '5'], env);
    expect(created.code).toBe(0);
    const id: string = created.json.account_id;
    const key: string = created.json.api_key;
    expect(key).toMatch(/^as_live_[0-9A-Za-z]{43}$/);
    expect(created.json.account).toMatchObject({ id, name: 'Acme Wines', tier: 'paid', status: 'active', quota: 500, rps: 5, disabled_endpoints: [] });
    expect(created.json.account.keys).toEqual([
      { id: expect.any(String), prefix: key.slice(0, 12), created_at: expect.any(String), revoked_at: null, last_used_at: null },
    ]);
    const first = await limited(key);
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-limit']).toBe('5');

    // list and show never print a key
    const list = await admin(['account', 'list'], env);
    expect(list.code).toBe(0);
    expect(list.json.accounts.map((a: { id: string }) => a.id)).toContain(id);
    const shown = await admin(['account', 'show', id], env);
    expect(shown.json).toMatchObject({ id, name: 'Acme Wines', quota_override: 500, rps_override: 5 });
    expect(list.stdout + shown.stdout).not.toContain(key.slice(12));

    // set: the running instance sees the new limits (its cached principal was invalidated)
    const set = await admin(['account', 'set', id, '--display-name', 'Acme Wine Shop', '--tier', 'free', '--quota', 'none', '--rps', '3'], env);
    expect(set.code).toBe(0);
    expect(set.json).toMatchObject({ display_name: 'Acme Wine Shop', tier: 'free', quota: 20, rps: 3, quota_override: null, rps_override: 3 });
    await eventually(async () => (await limited(key)).headers['x-ratelimit-limit'] === '3', 2000);

    // endpoint: disable → 402 on the running instance; enable → back
    const disabled = await admin(['account', 'endpoint', id, '--disable', 'reputation'], env);
    expect(disabled.json.disabled_endpoints).toEqual(['reputation']);
    await eventually(async () => (await limited(key)).status === 402, 2000);
    await admin(['account', 'endpoint', id, '--enable', 'reputation'], env);
    await eventually(async () => (await limited(key)).status === 200, 2000);

    // rotate-key: the key cached in the running instance stops working at once
    const rotated = await admin(['account', 'rotate-key', id], env);
    expect(rotated.code).toBe(0);
    expect(rotated.json).toEqual({ account_id: id, api_key: expect.stringMatching(/^as_live_/) });
    await eventually(async () => (await limited(key)).status === 401, 1000);
    expect((await limited(rotated.json.api_key)).status).toBe(200);

    // add-key: refused below Enterprise
    const refused = await admin(['account', 'add-key', id], env);
    expect(refused.code).toBe(1);
    expect(refused.json.error.code).toBe('conflict');

    // cancel: 403 on the running instance
    const cancelled = await admin(['account', 'cancel', id], env);
    expect(cancelled.json.status).toBe('cancelled');
    await eventually(async () => (await limited(rotated.json.api_key)).status === 403, 2000);
  });

  it('gives Enterprise accounts additional keys with add-key', async () => {
    const created = await admin(['account', 'create', '--name', 'Big Co', '--tier', 'enterprise'], env);
    const added = await admin(['account', 'add-key', created.json.account_id], env);
    expect(added.code).toBe(0);
    for (const key of [created.json.api_key, added.json.api_key]) {
      const res = await limited(key);
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-limit']).toBe('unlimited');
    }
    const shown = await admin(['account', 'show', created.json.account_id], env);
    expect(shown.json.keys.filter((k: { revoked_at: string | null }) => k.revoked_at === null)).toHaveLength(2);
  });

  it('rejects bad input with a JSON error on stderr naming the field, and exits non-zero', async () => {
    const badTier = await admin(['account', 'create', '--name', 'X', '--tier', 'gold'], env);
    expect(badTier.code).toBe(1);
    expect(badTier.json).toEqual({
      error: { code: 'bad_request', message: 'Invalid request: tier', details: [{ field: 'tier', message: 'tier must be one of free, paid, enterprise' }] },
    });
    const badQuota = await admin(['account', 'create', '--name', 'X', '--tier', 'free', '--quota', '0'], env);
    expect(badQuota.json.error.details[0].field).toBe('quota');
    const unknown = await admin(['account', 'show', '00000000-0000-0000-0000-000000000000'], env);
    expect(unknown.json.error.code).toBe('not_found');
    const noCommand = await admin(['account', 'explode'], env);
    expect(noCommand.code).toBe(1);
    expect(noCommand.json.error).toMatchObject({ code: 'bad_request', details: [{ field: 'command' }] });
    expect(noCommand.stdout).toBe('');
  });
});
