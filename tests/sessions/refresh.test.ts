import request from 'supertest';
import { useClockedHarness } from '../support/harness';
import { completeKyc, poll, SESSION_TABLES } from './support';

describe('public sessions and POST /v1/sessions/refresh', () => {
  const { h, clock } = useClockedHarness('2026-03-01T12:00:00Z', SESSION_TABLES);

  async function verifiedPublicSession() {
    const created = await request(h.app).post('/v1/sessions/public').send({ product_name: 'Research agent' });
    await completeKyc(h, created.body.session_id);
    const res = await poll(h, created.body.session_id, created.body.poll_secret);
    return res.body;
  }

  const refresh = (token: unknown) => request(h.app).post('/v1/sessions/refresh').send({ refresh_token: token });

  it('returns a refresh token with the operator token on the verified poll of a public session', async () => {
    const body = await verifiedPublicSession();
    expect(body).toMatchObject({
      status: 'verified',
      operator_token: expect.stringMatching(/^opc_/),
      token_ttl_seconds: 86400,
      refresh_token: expect.stringMatching(/^ort_[0-9A-Za-z]{43}$/),
      refresh_token_ttl_seconds: 90 * 86400,
    });
    const rt = await h.deps.db('refresh_tokens').first();
    expect(rt).toMatchObject({ parent_id: null, rotated_at: null, revoked_at: null });
    expect(rt.expires_at.toISOString()).toBe('2026-05-30T12:00:00.000Z');
    const credential = await h.deps.db('credentials').first();
    expect(credential).toMatchObject({ refresh_token_id: rt.id, minted_by_refresh_token_id: null, source: 'session' });
  });

  it('rotates: new credential and refresh token in the same family, linked to the presented token', async () => {
    const first = await verifiedPublicSession();
    clock.advance(3600_000);
    const res = await refresh(first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      operator_token: expect.stringMatching(/^opc_/),
      token_ttl_seconds: 86400,
      refresh_token: expect.stringMatching(/^ort_/),
      refresh_token_ttl_seconds: 7776000,
    });
    expect(res.body.refresh_token).not.toBe(first.refresh_token);
    const [parent, child] = await h.deps.db('refresh_tokens').orderBy('created_at');
    expect(parent.rotated_at).not.toBeNull();
    expect(child).toMatchObject({ parent_id: parent.id, family_id: parent.family_id, rotated_at: null, revoked_at: null });
    const minted = await h.deps.db('credentials').where({ source: 'refresh' }).first();
    expect(minted).toMatchObject({ refresh_token_id: child.id, minted_by_refresh_token_id: parent.id });
    expect((await h.deps.services.credentials.resolve(res.body.operator_token)).status).toBe('live');
    // The new refresh token rotates again.
    expect((await refresh(res.body.refresh_token)).status).toBe(200);
  });

  it('revokes the whole family and its credentials when a rotated token is presented again', async () => {
    const first = await verifiedPublicSession();
    const second = (await refresh(first.refresh_token)).body;
    const third = (await refresh(second.refresh_token)).body;
    const reuse = await refresh(first.refresh_token);
    expect(reuse.status).toBe(401);
    expect(reuse.body).toEqual({
      error: { code: 'invalid_credential', message: 'The refresh token is not valid. Start a new verification session.' },
      next_steps: { action: 'create_new_session', user_message: expect.any(String) },
    });
    expect(await h.deps.db('refresh_tokens').whereNull('revoked_at')).toHaveLength(0);
    expect(await h.deps.db('credentials').whereNull('revoked_at')).toHaveLength(0);
    for (const token of [first.operator_token, second.operator_token, third.operator_token]) {
      expect((await h.deps.services.credentials.resolve(token)).status).toBe('expired');
    }
    expect((await refresh(third.refresh_token)).status).toBe(401);
  });

  it('refuses unknown and expired refresh tokens with the same 401, and names a missing field', async () => {
    const first = await verifiedPublicSession();
    const unknown = await refresh('ort_' + 'x'.repeat(43));
    clock.advance(91 * 86400_000);
    const expired = await refresh(first.refresh_token);
    expect(unknown.status).toBe(401);
    expect(expired.body).toEqual(unknown.body);
    const missing = await request(h.app).post('/v1/sessions/refresh').send({});
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([{ field: 'refresh_token', message: 'refresh_token is required' }]);
  });

  it('issues no refresh token for self-verification sessions started for an account', async () => {
    const account = await h.deps.services.accounts.create({ name: 'Self Co', tier: 'paid' });
    const { body } = await h.deps.services.sessions.create({ kind: 'self', merchantAccountId: account.account.id, operatorAccountId: account.account.id });
    await completeKyc(h, body.session_id);
    const res = await poll(h, body.session_id, body.poll_secret);
    expect(res.body.status).toBe('verified');
    expect(res.body.refresh_token).toBeUndefined();
    const acct = await h.deps.db('accounts').where({ id: account.account.id }).first();
    expect(acct).toMatchObject({ kind: 'merchant', kyc_status: 'verified', verification_level: 'kyc_verified' });
    expect(await h.deps.db('accounts').where({ kind: 'operator' })).toHaveLength(0);
    const credential = await h.deps.db('credentials').first();
    expect(credential.account_id).toBe(account.account.id);
  });
});
