import crypto from 'node:crypto';
import request from 'supertest';
import { displayPrefix, newSecret, sha256Hex } from '../../server/crypto';
import { createMerchant, useClockedHarness } from '../support/harness';
import { eventually } from '../support/eventually';
import { DAY_MS, seedRefreshChain, verifyAccount } from './fixtures';

describe('DELETE /v1/credentials/{id}', () => {
  const { h, clock } = useClockedHarness('2026-03-01T12:00:00.000Z', ['accounts']);

  async function verifiedMerchant(name = 'Test Merchant') {
    const m = await createMerchant(h.deps, { name, tier: 'enterprise' });
    await verifyAccount(h.deps, m.accountId);
    return m;
  }
  const mint = async (apiKey: string) => (await request(h.app).post('/v1/credentials').set('X-API-Key', apiKey).send({ ttl_days: 7 })).body;
  const del = (apiKey: string, id: string) =>
    request(h.app)
      .delete(`/v1/credentials/${encodeURIComponent(id)}`)
      .set('X-API-Key', apiKey);
  const state = async (token: string) => (await h.deps.services.credentials.resolve(token)).status;

  it('revokes by id: the credential stops resolving and leaves the list', async () => {
    const m = await verifiedMerchant();
    const c = await mint(m.apiKey);
    const res = await del(m.apiKey, c.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: c.id, revoked: true });
    expect(await state(c.credential)).toBe('expired');
    expect((await request(h.app).get('/v1/credentials').set('X-API-Key', m.apiKey)).body.credentials).toEqual([]);
  });

  it('revokes by the opc_ value itself and answers with the id', async () => {
    const m = await verifiedMerchant();
    const c = await mint(m.apiKey);
    const keep = await mint(m.apiKey);
    const res = await del(m.apiKey, c.credential);
    expect(res.body).toEqual({ id: c.id, revoked: true });
    expect(await state(c.credential)).toBe('expired');
    expect(await state(keep.credential)).toBe('live');
  });

  it('is idempotent and keeps the first revocation time', async () => {
    const m = await verifiedMerchant();
    const c = await mint(m.apiKey);
    await del(m.apiKey, c.id).expect(200);
    const first = (await h.deps.db('credentials').where({ id: c.id }).first()).revoked_at;
    clock.advance(60_000);
    const again = await del(m.apiKey, c.id);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ id: c.id, revoked: true });
    expect((await h.deps.db('credentials').where({ id: c.id }).first()).revoked_at).toEqual(first);
  });

  it('revokes an expired credential too', async () => {
    const m = await verifiedMerchant();
    const c = await mint(m.apiKey);
    clock.advance(8 * DAY_MS);
    expect((await del(m.apiKey, c.id)).body).toEqual({ id: c.id, revoked: true });
    expect((await h.deps.db('credentials').where({ id: c.id }).first()).revoked_at).not.toBeNull();
  });

  it("answers another account's id, its opc_ value, an unknown id and garbage with the same 404", async () => {
    const m = await verifiedMerchant();
    const other = await verifiedMerchant('Other');
    const theirs = await mint(other.apiKey);
    const notFound = { error: { code: 'not_found', message: 'No credential with this id.' } };
    for (const id of [theirs.id, theirs.credential, crypto.randomUUID(), newSecret('opc_', 32), 'not-a-credential', "1' or '1'='1"]) {
      const res = await del(m.apiKey, id);
      expect({ id, status: res.status, body: res.body }).toEqual({ id, status: 404, body: notFound });
    }
    expect(await state(theirs.credential)).toBe('live');
  });

  it('requires an API key', async () => {
    const res = await request(h.app).delete(`/v1/credentials/${crypto.randomUUID()}`);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('signup_required');
  });

  /** A public (agent-started) session completed onto `accountId`, polled through the real endpoint. */
  async function sessionCredential(accountId: string): Promise<{ token: string; refresh: string }> {
    const created = await request(h.app).post('/v1/sessions/public').send({});
    expect(created.status).toBe(200);
    // Stands in for the verify page completing the session (its own browser tests cover that step).
    await h.deps.db.transaction((trx) =>
      h.deps.repos.sessions.completeIfPending({ id: created.body.session_id, status: 'verified', at: clock.now(), operatorAccountId: accountId }, trx),
    );
    const polled = await request(h.app).get(`/v1/sessions/${created.body.session_id}`).set('X-Poll-Secret', created.body.poll_secret);
    expect(polled.body).toMatchObject({ status: 'verified', operator_token: expect.stringMatching(/^opc_/), refresh_token: expect.any(String) });
    return { token: polled.body.operator_token, refresh: polled.body.refresh_token };
  }

  it('cascades: rotate three times through POST /v1/sessions/refresh, revoke the first, all four are dead', async () => {
    const m = await verifiedMerchant();
    const merchant = await createMerchant(h.deps, { name: 'Shop', tier: 'enterprise' });
    const first = await sessionCredential(m.accountId);
    const tokens = [first.token];
    let refresh = first.refresh;
    for (let i = 0; i < 3; i++) {
      const rotated = await request(h.app).post('/v1/sessions/refresh').send({ refresh_token: refresh });
      expect(rotated.status).toBe(200);
      tokens.push(rotated.body.operator_token);
      refresh = rotated.body.refresh_token;
    }
    const unrelated = await sessionCredential(m.accountId);
    const capture = (token: string) =>
      request(h.app)
        .post('/v1/credentials/wallets')
        .set('X-API-Key', merchant.apiKey)
        .send({ operator_token: token, wallet_address: '0x00000000000000000000000000000000000000aa', network: 'evm' });
    for (const token of tokens) expect((await capture(token)).status).toBe(200);
    const listedBefore = (await request(h.app).get('/v1/credentials').set('X-API-Key', m.apiKey)).body.credentials;
    expect(listedBefore.filter((c: { refreshable: boolean }) => c.refreshable)).toHaveLength(2); // newest of the chain + unrelated

    const resolved = await h.deps.services.credentials.resolve(tokens[0]);
    if (resolved.status !== 'live') throw new Error('the first credential should be live before the revocation');
    const firstId = resolved.credential.id;
    const res = await del(m.apiKey, firstId);
    expect(res.body).toEqual({ id: firstId, revoked: true });

    // All four credentials are dead on the real endpoints, and the chain's refresh token can mint nothing.
    for (const token of tokens) {
      const dead = await capture(token);
      expect(dead.status).toBe(401);
      expect(dead.body.error.code).toBe('token_expired');
    }
    const refused = await request(h.app).post('/v1/sessions/refresh').send({ refresh_token: refresh });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_credential');
    const rows = await h.deps.db('refresh_tokens').where({ account_id: m.accountId });
    expect(rows.filter((r) => r.revoked_at !== null)).toHaveLength(4);

    // Only the unrelated family is left, still live and refreshable.
    expect(await state(unrelated.token)).toBe('live');
    const listed = (await request(h.app).get('/v1/credentials').set('X-API-Key', m.apiKey)).body.credentials;
    expect(listed).toEqual([expect.objectContaining({ refreshable: true })]);
    expect((await request(h.app).post('/v1/sessions/refresh').send({ refresh_token: unrelated.refresh })).status).toBe(200);
  });

  it('cascades from seeded rotations in the shape the refresh endpoint writes (four links, plus an untouched family)', async () => {
    const m = await verifiedMerchant();
    const chain = await seedRefreshChain(h.deps, m.accountId, 3);
    const unrelated = await seedRefreshChain(h.deps, m.accountId, 1);
    for (const link of chain) expect(await state(link.token)).toBe('live');

    const res = await del(m.apiKey, chain[0].credentialId);
    expect(res.body).toEqual({ id: chain[0].credentialId, revoked: true });

    for (const link of chain) expect(await state(link.token)).toBe('expired');
    const tokens = await h.deps.db('refresh_tokens').whereIn(
      'id',
      chain.map((l) => l.refreshTokenId),
    );
    expect(tokens).toHaveLength(4);
    expect(tokens.every((t) => t.revoked_at !== null)).toBe(true);
    const listed = (await request(h.app).get('/v1/credentials').set('X-API-Key', m.apiKey)).body.credentials;
    expect(listed.map((c: { id: string }) => c.id).sort()).toEqual(unrelated.map((l) => l.credentialId).sort());
    for (const link of unrelated) expect(await state(link.token)).toBe('live');
  });

  it('cascades only forward: revoking a later rotation leaves the earlier credentials alone', async () => {
    const m = await verifiedMerchant();
    const chain = await seedRefreshChain(h.deps, m.accountId, 3);
    await del(m.apiKey, chain[2].token).expect(200);
    expect(await Promise.all(chain.map((l) => state(l.token)))).toEqual(['live', 'live', 'expired', 'expired']);
    const tokens = await h.deps
      .db('refresh_tokens')
      .whereIn(
        'id',
        chain.map((l) => l.refreshTokenId),
      )
      .orderBy('created_at');
    const revoked = Object.fromEntries(tokens.map((t) => [t.id, t.revoked_at !== null]));
    expect(chain.map((l) => revoked[l.refreshTokenId])).toEqual([false, false, true, true]);
  });

  it('also catches a rotation that commits while the revocation waits for its lock', async () => {
    const m = await verifiedMerchant();
    const chain = await seedRefreshChain(h.deps, m.accountId, 1);
    const familyId = (await h.deps.db('refresh_tokens').where({ id: chain[1].refreshTokenId }).first()).family_id;
    const last = chain[1];

    // A rotation in flight: it holds the presented token's row lock (as the refresh endpoint's conditional
    // UPDATE does) and has inserted the next token and credential, not yet committed.
    const trx = await h.deps.db.transaction();
    let rotated: { id: string; credentialId: string; token: string };
    try {
      await trx('refresh_tokens').where({ id: last.refreshTokenId }).whereNull('rotated_at').update({ rotated_at: clock.now() });
      const secret = newSecret('ort_', 32);
      const [next] = await trx('refresh_tokens')
        .insert({
          account_id: m.accountId,
          family_id: familyId,
          parent_id: last.refreshTokenId,
          token_hash: sha256Hex(secret),
          prefix: displayPrefix(secret),
          expires_at: new Date(clock.now().getTime() + 90 * DAY_MS),
        })
        .returning('id');
      const minted = await h.deps.services.credentials.mint(
        { accountId: m.accountId, ttlSeconds: 86_400, source: 'refresh', refreshTokenId: next.id, mintedByRefreshTokenId: last.refreshTokenId },
        trx,
      );
      rotated = { id: next.id, credentialId: minted.credential.id, token: minted.token };
    } catch (err) {
      await trx.rollback();
      throw err;
    }

    const pending = del(m.apiKey, chain[0].credentialId).then((r) => r);
    // Commit only once the DELETE is blocked on the rotation's row lock.
    await eventually(async () => {
      const { rows } = await h.deps.db.raw<{ rows: Array<{ n: string }> }>(
        "select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
      );
      return Number(rows[0].n) > 0;
    });
    await trx.commit();
    const res = await pending;
    expect(res.body).toEqual({ id: chain[0].credentialId, revoked: true });
    expect(await state(rotated.token)).toBe('expired');
    expect((await h.deps.db('refresh_tokens').where({ id: rotated.id }).first()).revoked_at).not.toBeNull();
  });

  it("leaves nothing to rotate: a conditional rotation of the revoked chain's refresh token matches no row", async () => {
    const m = await verifiedMerchant();
    const chain = await seedRefreshChain(h.deps, m.accountId, 0);
    await del(m.apiKey, chain[0].credentialId).expect(200);
    const n = await h.deps
      .db('refresh_tokens')
      .where({ id: chain[0].refreshTokenId })
      .whereNull('rotated_at')
      .whereNull('revoked_at')
      .update({ rotated_at: clock.now() });
    expect(n).toBe(0);
  });
});
