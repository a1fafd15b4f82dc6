// Authentication: X-API-Key or Authorization: Bearer; one indistinguishable 401 for
// missing/malformed/unknown/rotated keys; 403 for cancelled accounts; 402 for a disabled endpoint; key
// storage and rotation (also across instances sharing Redis).
import crypto from 'node:crypto';
import request from 'supertest';
import type { Express } from 'express';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { meteredApp } from '../support/meteredApp';
import { eventually } from '../support/eventually';
import { newSecret } from '../../server/crypto';

const SIGNUP_URL = 'https://signup.kya.test/start';
const SIGNUP_REQUIRED = {
  error: { code: 'signup_required', message: 'A valid API key is required (X-API-Key header).', signup_url: SIGNUP_URL },
};

describe('API-key authentication', () => {
  let h: Harness;
  let other: Harness; // a second instance sharing Redis (same prefix): cache invalidation must reach it
  let app: Express;
  let otherApp: Express;

  beforeAll(async () => {
    h = await createHarness({ env: { SIGNUP_URL } });
    other = await createHarness({ env: { SIGNUP_URL }, redisPrefix: h.prefix });
    app = meteredApp(h.deps);
    otherApp = meteredApp(other.deps);
    await resetTables(h.deps, ['accounts']);
  });
  afterAll(async () => {
    await other.close();
    await h.close();
  });

  it('accepts the key in the X-API-Key header', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    const res = await request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
    expect(res.status).toBe(200);
    expect(res.body.account).toBe(accountId);
  });

  it('accepts the key as Authorization: Bearer <key>', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    const res = await request(app).post('/t/metered').set('Authorization', `Bearer ${apiKey}`).send({ ok: true });
    expect(res.status).toBe(200);
    expect(res.body.account).toBe(accountId);
  });

  it('answers missing, malformed, unknown, wrong-scheme and rotated keys with one identical 401 body', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    expect((await request(app).get('/t/limited').set('X-API-Key', apiKey)).status).toBe(200); // now cached
    await h.deps.services.accounts.rotateKey(accountId);

    const attempts: Array<[string, Record<string, string>]> = [
      ['missing', {}],
      ['empty', { 'X-API-Key': '' }],
      ['malformed', { 'X-API-Key': 'not-a-key' }],
      ['unknown well-formed', { 'X-API-Key': newSecret('as_live_', 32) }],
      ['one character off', { 'X-API-Key': apiKey.slice(0, -1) + (apiKey.endsWith('a') ? 'b' : 'a') }],
      ['wrong scheme', { Authorization: `Basic ${Buffer.from(`x:${apiKey}`).toString('base64')}` }],
      ['rotated', { 'X-API-Key': apiKey }],
      ['rotated as bearer', { Authorization: `Bearer ${apiKey}` }],
    ];
    for (const [label, headers] of attempts) {
      const res = await request(app).post('/t/metered').set(headers).send({ ok: true });
      expect({ label, status: res.status, body: res.body }).toEqual({ label, status: 401, body: SIGNUP_REQUIRED });
      expect(res.headers['x-quota-used']).toBeUndefined();
    }
  });

  it('stores only a SHA-256 hash and a short display prefix of each key', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    expect(apiKey).toMatch(/^as_live_[0-9A-Za-z]{43}$/);
    const rows = await h.deps.db('api_keys').where({ account_id: accountId });
    expect(rows).toHaveLength(1);
    expect(rows[0].key_hash).toBe(crypto.createHash('sha256').update(apiKey).digest('hex'));
    expect(rows[0].prefix).toBe(apiKey.slice(0, 12));
    expect(JSON.stringify(rows)).not.toContain(apiKey.slice(12));
  });

  it('rotation invalidates the old key immediately here and on another instance that had it cached', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    expect((await request(otherApp).get('/t/limited').set('X-API-Key', apiKey)).status).toBe(200);
    const { api_key: newKey } = await h.deps.services.accounts.rotateKey(accountId);
    expect((await request(app).get('/t/limited').set('X-API-Key', apiKey)).status).toBe(401);
    const started = Date.now();
    await eventually(async () => (await request(otherApp).get('/t/limited').set('X-API-Key', apiKey)).status === 401, 2000);
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await request(otherApp).get('/t/limited').set('X-API-Key', newKey)).status).toBe(200);
    const keys = await h.deps.db('api_keys').where({ account_id: accountId }).orderBy('created_at');
    expect(keys.map((k) => k.revoked_at === null)).toEqual([false, true]);
  });

  it('answers 403 account_cancelled once the account is cancelled, also where it was cached', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    expect((await request(otherApp).get('/t/limited').set('X-API-Key', apiKey)).status).toBe(200);
    await h.deps.services.accounts.cancel(accountId);
    const expected = { error: { code: 'account_cancelled', message: 'This account has been cancelled.' } };
    const here = await request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
    expect(here.status).toBe(403);
    expect(here.body).toEqual(expected);
    await eventually(async () => (await request(otherApp).get('/t/limited').set('X-API-Key', apiKey)).status === 403, 2000);
  });

  it('answers 402 payment_required on a disabled endpoint while other endpoints keep working', async () => {
    const { accountId, apiKey } = await createMerchant(h.deps);
    expect((await request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true })).status).toBe(200);
    await h.deps.services.accounts.setEndpoint(accountId, 'assess', false);

    const res = await request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ error: { code: 'payment_required', message: 'The assess endpoint is not enabled for this account.' } });
    expect((await request(app).get('/t/limited').set('X-API-Key', apiKey)).status).toBe(200);

    await h.deps.services.accounts.setEndpoint(accountId, 'assess', true);
    expect((await request(app).post('/t/metered').set('X-API-Key', apiKey).send({ ok: true })).status).toBe(200);
  });

  it('rejects an unknown endpoint name with a 400 naming the field', async () => {
    const { accountId } = await createMerchant(h.deps);
    await expect(h.deps.services.accounts.setEndpoint(accountId, 'teleport', false)).rejects.toMatchObject({
      code: 'bad_request',
      details: [{ field: 'endpoint', message: 'endpoint must be one of assess, sessions, credentials, wallets, reputation' }],
    });
  });

  it('gives Enterprise accounts several active keys and every other tier exactly one', async () => {
    const ent = await createMerchant(h.deps, { tier: 'enterprise' });
    const { api_key: second } = await h.deps.services.accounts.addKey(ent.accountId);
    for (const key of [ent.apiKey, second]) {
      expect((await request(app).get('/t/limited').set('X-API-Key', key)).status).toBe(200);
    }
    // Downgrading while two keys are active would leave a non-Enterprise account with two keys.
    await expect(h.deps.services.accounts.set(ent.accountId, { tier: 'paid' })).rejects.toMatchObject({ code: 'conflict' });
    const { api_key: only } = await h.deps.services.accounts.rotateKey(ent.accountId);
    await h.deps.services.accounts.set(ent.accountId, { tier: 'paid' });
    expect((await request(app).get('/t/limited').set('X-API-Key', only)).status).toBe(200);
    expect((await request(app).get('/t/limited').set('X-API-Key', second)).status).toBe(401);

    const paid = await createMerchant(h.deps, { tier: 'paid' });
    await expect(h.deps.services.accounts.addKey(paid.accountId)).rejects.toMatchObject({ code: 'conflict', status: 409 });
  });

  it('does not treat operator accounts as merchants', async () => {
    const [op] = await h.deps.db('accounts').insert({ kind: 'operator', name: 'Operator' }).returning('id');
    await expect(h.deps.services.accounts.rotateKey(op.id)).rejects.toMatchObject({ code: 'not_found' });
  });
});
