import request from 'supertest';
import { createHarness, createMerchant, useClockedHarness } from '../support/harness';
import { DAY_MS, seedRefreshChain, verifyAccount } from './fixtures';

describe('GET /v1/credentials', () => {
  const { h, clock } = useClockedHarness('2026-03-01T12:00:00.000Z', ['accounts']);

  const list = (apiKey: string) => request(h.app).get('/v1/credentials').set('X-API-Key', apiKey);

  it('shows only kyc_status none and no credentials for an account without KYC', async () => {
    const m = await createMerchant(h.deps);
    const res = await list(m.apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ account_verification: { kyc_status: 'none' }, credentials: [] });
  });

  it('shows every account_verification field for a verified account, sanctions_clear true while fresh', async () => {
    const m = await createMerchant(h.deps);
    const checked = new Date(clock.now().getTime() - 10 * DAY_MS);
    await verifyAccount(h.deps, m.accountId, { kyc_verified_at: checked, sanctions_checked_at: checked, jurisdiction: 'DE', age_bracket: '18+' });
    const res = await list(m.apiKey);
    expect(res.body).toEqual({
      account_verification: {
        kyc_status: 'verified',
        kyc_verified_at: checked.toISOString(),
        jurisdiction: 'DE',
        age_verified: true,
        age_bracket: '18+',
        sanctions_clear: true,
        sanctions_checked_at: checked.toISOString(),
        operator_type: 'individual',
      },
      credentials: [],
    });
  });

  it('reports sanctions_clear null once the screening is older than the configured window (90 days)', async () => {
    const m = await createMerchant(h.deps);
    const at = (days: number) => new Date(clock.now().getTime() - days * DAY_MS);
    await verifyAccount(h.deps, m.accountId, { sanctions_checked_at: at(90) });
    expect((await list(m.apiKey)).body.account_verification.sanctions_clear).toBe(true);
    await verifyAccount(h.deps, m.accountId, { sanctions_checked_at: at(91) });
    const stale = (await list(m.apiKey)).body.account_verification;
    expect(stale.sanctions_clear).toBeNull();
    expect(stale.sanctions_checked_at).toBe(at(91).toISOString());
  });

  it('uses the account sanctions_freshness_days override over the configured window', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId, { sanctions_checked_at: new Date(clock.now().getTime() - 20 * DAY_MS), sanctions_freshness_days: 14 });
    expect((await list(m.apiKey)).body.account_verification.sanctions_clear).toBeNull();
    await h.deps.repos.accounts.update({ id: m.accountId, patch: { sanctions_freshness_days: 30 } });
    expect((await list(m.apiKey)).body.account_verification.sanctions_clear).toBe(true);
  });

  it('follows SANCTIONS_FRESHNESS_DAYS from config', async () => {
    const short = await createHarness({ env: { SANCTIONS_FRESHNESS_DAYS: '5' }, overrides: { clock } });
    try {
      const m = await createMerchant(short.deps);
      await verifyAccount(short.deps, m.accountId, { sanctions_checked_at: new Date(clock.now().getTime() - 6 * DAY_MS) });
      const res = await request(short.app).get('/v1/credentials').set('X-API-Key', m.apiKey);
      expect(res.body.account_verification.sanctions_clear).toBeNull();
    } finally {
      await short.close();
    }
  });

  it('reports sanctions_clear false on a sanctions hit and null when never screened', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId, { sanctions_status: 'flagged' });
    expect((await list(m.apiKey)).body.account_verification.sanctions_clear).toBe(false);
    await verifyAccount(h.deps, m.accountId, { sanctions_status: null, sanctions_checked_at: null });
    const never = (await list(m.apiKey)).body.account_verification;
    expect(never.sanctions_clear).toBeNull();
    expect(never.sanctions_checked_at).toBeNull();
  });

  it('lists active credentials newest first with last_used_at, omitting expired, revoked and other accounts', async () => {
    const m = await createMerchant(h.deps);
    const other = await createMerchant(h.deps, { name: 'Other' });
    await verifyAccount(h.deps, m.accountId);
    await verifyAccount(h.deps, other.accountId);
    const mint = async (apiKey: string, body: object) => (await request(h.app).post('/v1/credentials').set('X-API-Key', apiKey).send(body)).body;

    const shortLived = await mint(m.apiKey, { label: 'short', ttl_days: 1 });
    clock.advance(1000);
    const used = await mint(m.apiKey, { label: 'used', ttl_days: 30 });
    clock.advance(1000);
    const revoked = await mint(m.apiKey, { label: 'revoked', ttl_days: 30 });
    await mint(other.apiKey, { label: 'someone else' });
    await request(h.app).delete(`/v1/credentials/${revoked.id}`).set('X-API-Key', m.apiKey).expect(200);

    clock.advance(DAY_MS); // `short` is now past its TTL
    const useAt = clock.now();
    expect((await h.deps.services.credentials.resolve(used.credential)).status).toBe('live');
    await h.deps.services.credentials.flushTouches();

    const res = await list(m.apiKey);
    expect(res.status).toBe(200);
    expect(res.body.credentials).toEqual([
      {
        id: used.id,
        prefix: used.prefix,
        label: 'used',
        expires_at: used.expires_at,
        created_at: used.created_at,
        last_used_at: useAt.toISOString(),
        refreshable: false,
      },
    ]);
    expect(res.body.credentials.map((c: { id: string }) => c.id)).not.toContain(shortLived.id);
  });

  it('keeps an expired credential listed while its refresh token can still mint a replacement', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId);
    const [first] = await seedRefreshChain(h.deps, m.accountId, 0);
    const created = await request(h.app).post('/v1/credentials').set('X-API-Key', m.apiKey).send({ ttl_days: 365 });

    const live = await list(m.apiKey);
    expect(live.body.credentials.map((c: { id: string; refreshable: boolean }) => [c.id, c.refreshable])).toEqual([
      [created.body.id, false],
      [first.credentialId, true],
    ]);
    expect(live.body.credentials[1].last_used_at).toBeNull();

    clock.advance(2 * DAY_MS); // the session credential (24 h) expired; its refresh token (90 days) is live
    const expired = await list(m.apiKey);
    expect(expired.body.credentials.map((c: { id: string; refreshable: boolean }) => [c.id, c.refreshable])).toEqual([
      [created.body.id, false],
      [first.credentialId, true],
    ]);

    clock.advance(89 * DAY_MS); // the refresh token expired as well
    expect((await list(m.apiKey)).body.credentials.map((c: { id: string }) => c.id)).toEqual([created.body.id]);
  });

  it('shows only the newest credential of a rotated chain as refreshable; rotated and revoked tokens are not', async () => {
    const m = await createMerchant(h.deps);
    await verifyAccount(h.deps, m.accountId);
    const chain = await seedRefreshChain(h.deps, m.accountId, 2);
    const flags = async () =>
      Object.fromEntries((await list(m.apiKey)).body.credentials.map((c: { id: string; refreshable: boolean }) => [c.id, c.refreshable]));
    expect(await flags()).toEqual({ [chain[0].credentialId]: false, [chain[1].credentialId]: false, [chain[2].credentialId]: true });

    clock.advance(2 * DAY_MS); // all three expired: only the one whose token is unrotated stays listed
    expect(await flags()).toEqual({ [chain[2].credentialId]: true });

    await h.deps.db('refresh_tokens').where({ id: chain[2].refreshTokenId }).update({ revoked_at: clock.now() });
    expect(await flags()).toEqual({});
  });
});
