// The dashboard's API keys page below the browser: when each key was last used (written behind the request
// path, at most once a minute per key); Enterprise accounts adding and revoking single keys (a revoked key is
// refused at once by every instance; the last key never goes), other tiers refused with 403; rotation by
// Post/Redirect/Get, the new key shown once from an encrypted server-side flash.
import request from 'supertest';
import { createHarness, createMerchant, useClockedHarness } from '../support/harness';
import { eventually } from '../support/eventually';

describe('dashboard API keys', () => {
  const { h, clock } = useClockedHarness('2026-05-01T10:00:00.000Z', ['accounts']);

  /** A signed-in dashboard session: GET a page, or POST one of its forms with the page's CSRF token. */
  async function signedIn(apiKey: string) {
    const { sessionId } = (await h.deps.services.dashboard.signInWithKey(apiKey))!;
    const cookie = `kya_dashboard=${sessionId}`;
    const get = (path: string) => request(h.app).get(path).set('Cookie', cookie);
    const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/dashboard/keys')).text)![1];
    const post = (path: string) => request(h.app).post(path).set('Cookie', cookie).type('form').send({ csrf });
    return { sessionId, get, post };
  }
  const activeKeys = async (accountId: string) => (await h.deps.services.accounts.show(accountId)).keys.filter((k) => !k.revoked_at);
  const newKeyOn = (html: string) => /<code id="new-key">([^<]+)<\/code>/.exec(html)?.[1] ?? null;

  const lastUsed = async (keyId: string) => ((await h.deps.db('api_keys').where({ id: keyId }).first()) as { last_used_at: Date | null }).last_used_at;
  const call = (key: string) => request(h.app).get('/v1/credentials').set('X-API-Key', key);

  it('records when a key last authenticated, written behind the request and at most once a minute per key', async () => {
    const m = await createMerchant(h.deps);
    const [key] = (await h.deps.services.accounts.show(m.accountId)).keys;
    await h.deps.services.accounts.flushKeyUses();
    expect(await lastUsed(key.id)).toBeNull();

    expect((await call(m.apiKey)).status).toBe(200);
    await h.deps.services.accounts.flushKeyUses();
    expect(await lastUsed(key.id)).toEqual(new Date('2026-05-01T10:00:00.000Z'));

    // Within the minute: nothing new is noted, however many requests.
    clock.advance(30_000);
    for (let i = 0; i < 5; i++) expect((await call(m.apiKey)).status).toBe(200);
    await h.deps.services.accounts.flushKeyUses();
    expect(await lastUsed(key.id)).toEqual(new Date('2026-05-01T10:00:00.000Z'));

    clock.advance(31_000);
    expect((await call(m.apiKey)).status).toBe(200);
    // A refused key is no use of any key.
    expect((await call(`${m.apiKey.slice(0, -1)}x`)).status).toBe(401);
    await h.deps.services.accounts.flushKeyUses();
    expect(await lastUsed(key.id)).toEqual(new Date('2026-05-01T10:01:01.000Z'));
  });

  it('shows each active key with its creation time and last use, "never" for a key not used yet', async () => {
    const m = await createMerchant(h.deps, { tier: 'enterprise' });
    const extra = await h.deps.services.accounts.addKey(m.accountId);
    clock.advance(90_000);
    const session = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!; // a use of the first key
    await h.deps.services.accounts.flushKeyUses();
    const page = await request(h.app).get('/dashboard/keys').set('Cookie', `kya_dashboard=${session.sessionId}`);
    expect(page.status).toBe(200);
    const rows = [...page.text.matchAll(/<tr><td><code>(as_live_\w+)<\/code><\/td><td>([^<]+)<\/td><td>([^<]+)<\/td>/g)].map((r) => [r[1], r[2], r[3]]);
    const created = expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/); // the database's own clock
    expect(rows).toEqual([
      [m.apiKey.slice(0, 12), created, '2026-05-01 10:01'],
      [extra.api_key.slice(0, 12), created, 'never'],
    ]);
  });

  it('rotates by Post/Redirect/Get: the new key is shown once, from an encrypted server-side flash, never in the URL', async () => {
    const m = await createMerchant(h.deps);
    const d = await signedIn(m.apiKey);
    const posted = await d.post('/dashboard/keys/rotate');
    expect([posted.status, posted.headers.location]).toEqual([303, '/dashboard/keys']);
    const [stored] = await h.deps.db('dashboard_sessions').select('flash_encrypted');
    const first = await d.get('/dashboard/keys');
    const newKey = newKeyOn(first.text)!;
    expect(newKey).toMatch(/^as_live_/);
    expect(first.text).toContain('Every previous key has stopped working.');
    expect(stored.flash_encrypted).not.toContain(newKey.slice(8));
    expect(await h.deps.services.accounts.authenticate(newKey)).toMatchObject({ accountId: m.accountId });
    expect(await h.deps.services.accounts.authenticate(m.apiKey)).toBeNull();
    // A reload is a GET: no second rotation, and the key is not shown again.
    const reloaded = await d.get('/dashboard/keys');
    expect(newKeyOn(reloaded.text)).toBeNull();
    expect(await activeKeys(m.accountId)).toHaveLength(1);
  });

  it('lets a flash that was not picked up within a minute lapse', async () => {
    const m = await createMerchant(h.deps);
    const d = await signedIn(m.apiKey);
    expect((await d.post('/dashboard/keys/rotate')).status).toBe(303);
    clock.advance(61_000);
    expect(newKeyOn((await d.get('/dashboard/keys')).text)).toBeNull();
  });

  it('adds and revokes single keys on Enterprise; a revoked key is refused at once by another instance', async () => {
    const m = await createMerchant(h.deps, { tier: 'enterprise' });
    const other = await createHarness({ redisPrefix: h.prefix, overrides: { clock } });
    try {
      const d = await signedIn(m.apiKey);
      const added = await d.post('/dashboard/keys/add');
      expect([added.status, added.headers.location]).toEqual([303, '/dashboard/keys']);
      const page = await d.get('/dashboard/keys');
      const extraKey = newKeyOn(page.text)!;
      expect(page.text).toContain('Your other keys keep working.');
      expect(newKeyOn((await d.get('/dashboard/keys')).text)).toBeNull();

      // The other instance caches the new key's principal (the frozen clock never expires it).
      const onOther = () => request(other.app).get('/v1/credentials').set('X-API-Key', extraKey);
      expect((await onOther()).status).toBe(200);

      const extra = (await activeKeys(m.accountId)).find((k) => extraKey.startsWith(k.prefix))!;
      const confirm = await d.get(`/dashboard/keys/${extra.id}/revoke`);
      expect(confirm.status).toBe(200);
      expect(confirm.text).toContain(`Revoke key ${extra.prefix}</button>`);
      expect(confirm.text).toContain('<a href="/dashboard/keys">Cancel, keep the key</a>');
      expect(await activeKeys(m.accountId)).toHaveLength(2); // showing the confirmation revokes nothing

      const revoked = await d.post(`/dashboard/keys/${extra.id}/revoke`);
      expect([revoked.status, revoked.headers.location]).toEqual([303, '/dashboard/keys']);
      expect((await d.get('/dashboard/keys')).text).toContain(`Key ${extra.prefix} revoked: requests that present it are refused.`);
      await eventually(async () => (await onOther()).status === 401, 1000);
      expect((await request(other.app).get('/v1/credentials').set('X-API-Key', m.apiKey)).status).toBe(200);
    } finally {
      await other.close();
    }
  });

  it('never revokes the last active key, not even two revocations racing', async () => {
    const m = await createMerchant(h.deps, { tier: 'enterprise' });
    const d = await signedIn(m.apiKey);
    const [only] = await activeKeys(m.accountId);
    expect((await d.get('/dashboard/keys')).text).not.toContain('Revoke…');
    const refused = await d.post(`/dashboard/keys/${only.id}/revoke`);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('This is your only active API key, so it cannot be revoked. Rotate it instead: that issues a new key and revokes this one.');
    expect((await d.get(`/dashboard/keys/${only.id}/revoke`)).status).toBe(409);

    await h.deps.services.accounts.addKey(m.accountId);
    const both = await activeKeys(m.accountId);
    const outcomes = await Promise.allSettled(both.map((k) => h.deps.services.accounts.revokeKey(m.accountId, k.id)));
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(outcomes.find((o) => o.status === 'rejected')).toMatchObject({ reason: { code: 'conflict' } });
    expect(await activeKeys(m.accountId)).toHaveLength(1);
  });

  it('answers 404 for a key that is not an active key of this account', async () => {
    const m = await createMerchant(h.deps, { tier: 'enterprise' });
    const stranger = await createMerchant(h.deps, { tier: 'enterprise' });
    await h.deps.services.accounts.addKey(m.accountId);
    const [strangersKey] = await activeKeys(stranger.accountId);
    const d = await signedIn(m.apiKey);
    for (const id of [strangersKey.id, 'not-a-uuid']) {
      const res = await d.post(`/dashboard/keys/${id}/revoke`);
      expect(res.status).toBe(404);
      expect(res.text).toContain('No such active key.');
    }
    expect(await activeKeys(stranger.accountId)).toHaveLength(1);
  });

  it('shows no add or revoke controls below Enterprise and refuses their routes with 403', async () => {
    const m = await createMerchant(h.deps, { tier: 'paid' });
    const d = await signedIn(m.apiKey);
    const page = await d.get('/dashboard/keys');
    expect(page.text).not.toContain('Add an API key');
    expect(page.text).not.toContain('Revoke…');
    const [key] = await activeKeys(m.accountId);
    for (const res of [
      await d.post('/dashboard/keys/add'),
      await d.post(`/dashboard/keys/${key.id}/revoke`),
      await d.get(`/dashboard/keys/${key.id}/revoke`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.text).toContain('Adding and revoking single API keys is available on the Enterprise plan only. Use Rotate API key to replace your key.');
    }
    expect(await activeKeys(m.accountId)).toHaveLength(1);
  });

  it('refuses the new key forms without the CSRF token', async () => {
    const m = await createMerchant(h.deps, { tier: 'enterprise' });
    const d = await signedIn(m.apiKey);
    const res = await request(h.app).post('/dashboard/keys/add').set('Cookie', `kya_dashboard=${d.sessionId}`).type('form').send({});
    expect(res.status).toBe(403);
    expect(res.text).toContain('This form has expired.');
    expect(await activeKeys(m.accountId)).toHaveLength(1);
  });
});
