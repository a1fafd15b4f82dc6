import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { signStripePayload, verifyStripeSignature } from '../../server/kyc/stripe';
import { createSession, poll, SESSION_TABLES } from './support';
import { Wallet } from 'ethers';
import { challengeFrom, claimCookieFrom, csrfFrom } from '../verify/support';

const SECRET = 'whsec_test_secret';

describe('Stripe-Signature verification', () => {
  const body = Buffer.from('{"id":"evt_1"}');
  const now = new Date('2026-03-01T12:00:00Z');
  const t = Math.floor(now.getTime() / 1000);

  it('accepts a valid signature and any matching v1 among several', () => {
    expect(verifyStripeSignature(body, signStripePayload(body.toString(), SECRET, t), SECRET, now)).toBe(true);
    const good = signStripePayload(body.toString(), SECRET, t).split(',')[1];
    expect(verifyStripeSignature(body, `t=${t},v1=${'0'.repeat(64)},${good}`, SECRET, now)).toBe(true);
  });

  it('rejects a wrong secret, a modified body, a missing header and timestamps outside 300 s', () => {
    expect(verifyStripeSignature(body, signStripePayload(body.toString(), 'whsec_other', t), SECRET, now)).toBe(false);
    expect(verifyStripeSignature(Buffer.from('{"id":"evt_2"}'), signStripePayload(body.toString(), SECRET, t), SECRET, now)).toBe(false);
    expect(verifyStripeSignature(body, undefined, SECRET, now)).toBe(false);
    expect(verifyStripeSignature(body, signStripePayload(body.toString(), SECRET, t - 301), SECRET, now)).toBe(false);
    expect(verifyStripeSignature(body, signStripePayload(body.toString(), SECRET, t + 301), SECRET, now)).toBe(false);
    expect(verifyStripeSignature(body, signStripePayload(body.toString(), SECRET, t - 300), SECRET, now)).toBe(true);
  });
});

describe('Stripe Identity provider end to end (fake Stripe API)', () => {
  let h: Harness;
  let clock: TestClock;
  let fake: http.Server;
  const calls: Array<{ method: string; url: string; body: string; auth: string | undefined }> = [];
  let vsStatus: Record<string, unknown> = {};

  beforeAll(async () => {
    fake = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        calls.push({ method: req.method!, url: req.url!, body, auth: req.headers.authorization });
        res.setHeader('Content-Type', 'application/json');
        if (req.method === 'POST' && req.url === '/v1/identity/verification_sessions') {
          res.end(
            JSON.stringify({
              id: 'vs_stripe_123',
              object: 'identity.verification_session',
              url: 'https://verify.stripe.com/start/test_abc',
              status: 'requires_input',
            }),
          );
        } else if (req.method === 'GET' && req.url!.startsWith('/v1/identity/verification_sessions/vs_stripe_123')) {
          res.end(JSON.stringify({ id: 'vs_stripe_123', object: 'identity.verification_session', ...vsStatus }));
        } else {
          res.statusCode = 404;
          res.end(JSON.stringify({ error: { message: 'no such route' } }));
        }
      });
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
    const port = (fake.address() as AddressInfo).port;
    clock = new TestClock(new Date());
    h = await createHarness({
      env: { KYC_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_123', STRIPE_WEBHOOK_SECRET: SECRET, STRIPE_API_BASE: `http://127.0.0.1:${port}` },
      overrides: { clock },
    });
  });
  beforeEach(async () => {
    await resetTables(h.deps, SESSION_TABLES);
    calls.length = 0;
  });
  afterAll(async () => {
    await h.close();
    fake.close();
  });

  function webhook(event: object, options: { secret?: string; at?: number } = {}) {
    const raw = JSON.stringify(event);
    const t = options.at ?? Math.floor(clock.now().getTime() / 1000);
    return request(h.app)
      .post('/v1/kyc/stripe/webhook')
      .set('Content-Type', 'application/json')
      .set('Stripe-Signature', signStripePayload(raw, options.secret ?? SECRET, t))
      .send(raw);
  }

  async function startedSession() {
    const { apiKey } = await createMerchant(h.deps);
    const s = await createSession(h, apiKey);
    const page = await request(h.app).get(`/verify/${s.session_id}`);
    expect(page.text).toContain('Continue to the document check');
    const { cookie, token } = csrfFrom(page);
    const started = await request(h.app).post(`/verify/${s.session_id}/stripe`).set('Cookie', cookie).type('form').send({ csrf: token });
    expect(started.status).toBe(200);
    expect(started.text).toContain('href="https://verify.stripe.com/start/test_abc"');
    return s;
  }

  it('creates a VerificationSession and applies the verified event once', async () => {
    const s = await startedSession();
    const create = calls.find((c) => c.method === 'POST')!;
    expect(create.auth).toBe('Bearer sk_test_123');
    const form = new URLSearchParams(create.body);
    expect(form.get('type')).toBe('document');
    expect(form.get('metadata[kya_session_id]')).toBe(s.session_id);
    expect(form.get('return_url')).toMatch(new RegExp(`^http://kya\\.test/verify/${s.session_id}/return\\?key=[0-9A-Za-z]{40,}$`));

    vsStatus = {
      status: 'verified',
      verified_outputs: { first_name: 'Alice', last_name: 'Example', dob: { day: 12, month: 4, year: 1990 }, address: { country: 'DE' } },
      last_verification_report: { document: { number: 'P1234567', issuing_country: 'DE' } },
    };
    const event = {
      id: 'evt_verified_1',
      type: 'identity.verification_session.verified',
      data: { object: { id: 'vs_stripe_123', object: 'identity.verification_session', status: 'verified' } },
    };
    const first = await webhook(event);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ received: true, outcome: 'processed' });
    const again = await webhook(event);
    expect(again.body).toEqual({ received: true, outcome: 'duplicate' });
    expect(await h.deps.db('kyc_webhook_events')).toHaveLength(1);

    const res = await poll(h, s.session_id, s.poll_secret);
    expect(res.body.status).toBe('verified');
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator).toMatchObject({ kyc_status: 'verified', kyc_provider: 'stripe', kyc_reference: 'vs_stripe_123', jurisdiction: 'DE' });
  });

  it('binds wallet claims to the browser that comes back from Stripe, once', async () => {
    const s = await startedSession();
    const returnUrl = new URL(new URLSearchParams(calls.find((c) => c.method === 'POST')!.body).get('return_url')!);
    vsStatus = {
      status: 'verified',
      verified_outputs: { first_name: 'Alice', last_name: 'Example', dob: { day: 12, month: 4, year: 1990 }, address: { country: 'DE' } },
      last_verification_report: { document: { number: 'P1234567', issuing_country: 'DE' } },
    };
    await webhook({
      id: 'evt_verified_2',
      type: 'identity.verification_session.verified',
      data: { object: { id: 'vs_stripe_123', object: 'identity.verification_session' } },
    });

    const back = await request(h.app).get(`${returnUrl.pathname}${returnUrl.search}`);
    expect(back.status).toBe(200);
    expect(back.headers.refresh).toBe(`0; url=/verify/${s.session_id}`);
    const claimCookie = claimCookieFrom(back)!;
    expect(claimCookie).toMatch(/^kya_verify_claim=[0-9A-Za-z]{40,}$/);
    // The return link works once: someone replaying it (or guessing a key) gets no claim cookie.
    expect(claimCookieFrom(await request(h.app).get(`${returnUrl.pathname}${returnUrl.search}`))).toBeNull();
    expect(claimCookieFrom(await request(h.app).get(`/verify/${s.session_id}/return?key=${'x'.repeat(43)}`))).toBeNull();
    expect((await request(h.app).get(`/verify/${s.session_id}`)).text).not.toContain('id="challenge-message"');

    const page = await request(h.app).get(`/verify/${s.session_id}`).set('Cookie', claimCookie);
    const challenge = challengeFrom(page.text);
    const { cookie, token } = csrfFrom(page);
    const wallet = Wallet.createRandom();
    const linked = await request(h.app)
      .post(`/verify/${s.session_id}/wallet`)
      .set('Cookie', `${cookie}; ${claimCookie}`)
      .type('form')
      .send({ csrf: token, challenge_id: challenge.id, network: 'evm', address: wallet.address, signature: await wallet.signMessage(challenge.message) });
    expect(linked.status).toBe(303);
    expect(await h.deps.db('operator_wallets')).toEqual([expect.objectContaining({ address: wallet.address.toLowerCase() })]);
  });

  it('moves the session to failed on requires_input with an error', async () => {
    const s = await startedSession();
    vsStatus = { status: 'requires_input', last_error: { code: 'selfie_face_mismatch', reason: 'The selfie did not match the document.' } };
    const res = await webhook({
      id: 'evt_fail_1',
      type: 'identity.verification_session.requires_input',
      data: { object: { id: 'vs_stripe_123', object: 'identity.verification_session' } },
    });
    expect(res.body.outcome).toBe('processed');
    expect((await poll(h, s.session_id, s.poll_secret)).body.status).toBe('failed');
  });

  it('answers signed events it cannot process with 2xx (recorded as ignored when the id is usable), never 500', async () => {
    const s = await startedSession();
    await h.deps.db('sessions').where({ id: s.session_id }).update({ kyc_reference: 'vs_gone_at_stripe' });
    const verified = 'identity.verification_session.verified';
    const vsObject = (id: unknown) => ({ data: { object: { id, object: 'identity.verification_session' } } });
    const cases: Array<[string, object, boolean]> = [
      ['a session Stripe does not know', { id: 'evt_gone', type: verified, ...vsObject('vs_gone_at_stripe') }, true],
      ['a session that is not ours', { id: 'evt_foreign', type: verified, ...vsObject('vs_not_ours_123') }, true],
      ['an object of another kind', { id: 'evt_other', type: verified, data: { object: { id: 'cus_1', object: 'customer' } } }, true],
      ['no object at all', { id: 'evt_none', type: verified, data: null }, true],
      ['a lone surrogate in the object id', { id: 'evt_surrogate_obj', type: verified, ...vsObject('vs_\ud800x') }, true],
      ['a very long id', { id: `evt_${'x'.repeat(200_000)}`, type: verified, ...vsObject('vs_stripe_123') }, false],
      ['a lone surrogate in the id', { id: 'evt_\udc00', type: verified, ...vsObject('vs_stripe_123') }, false],
      ['a NUL in the id', { id: 'evt_\u0000', type: verified, ...vsObject('vs_stripe_123') }, false],
      ['a NUL in the type', { id: 'evt_nul_type', type: 'identity.\u0000', ...vsObject('vs_stripe_123') }, false],
    ];
    for (const [what, event, recorded] of cases) {
      const res = await webhook(event);
      expect([what, res.status, res.body]).toEqual([what, 200, { received: true, outcome: 'ignored' }]);
      const id = (event as { id: string }).id;
      expect([
        what,
        (
          await h.deps
            .db('kyc_webhook_events')
            .where({ provider: 'stripe' })
            .whereRaw('event_id = ?', [id.replaceAll('\u0000', '')])
        ).length,
      ]).toEqual([what, recorded ? 1 : 0]);
    }
    // Only the session of ours was looked up at Stripe.
    expect(calls.filter((c) => c.method === 'GET').map((c) => c.url.split('?')[0])).toEqual(['/v1/identity/verification_sessions/vs_gone_at_stripe']);
    expect((await h.deps.db('sessions').where({ id: s.session_id }).first()).status).toBe('pending');
  });

  it('answers 503 (so Stripe retries) when Stripe fails while fetching the result of one of our sessions', async () => {
    await startedSession();
    vsStatus = {};
    const down = http.createServer((_req, res) => {
      res.statusCode = 502;
      res.end('{}');
    });
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', r));
    const failing = await createHarness({
      env: {
        KYC_PROVIDER: 'stripe',
        STRIPE_SECRET_KEY: 'sk_test_123',
        STRIPE_WEBHOOK_SECRET: SECRET,
        STRIPE_API_BASE: `http://127.0.0.1:${(down.address() as AddressInfo).port}`,
      },
      overrides: { clock },
    });
    try {
      const raw = JSON.stringify({
        id: 'evt_retry',
        type: 'identity.verification_session.verified',
        data: { object: { id: 'vs_stripe_123', object: 'identity.verification_session' } },
      });
      const res = await request(failing.app)
        .post('/v1/kyc/stripe/webhook')
        .set('Content-Type', 'application/json')
        .set('Stripe-Signature', signStripePayload(raw, SECRET, Math.floor(clock.now().getTime() / 1000)))
        .send(raw);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('30');
      expect(res.body.error).toEqual({ code: 'api_error', message: 'Stripe is temporarily unavailable.' });
      // The advice waits what Retry-After says.
      expect(res.body.agent_instructions.steps[0]).toBe('Wait 30 seconds, then retry the same request.');
      expect(await h.deps.db('kyc_webhook_events')).toHaveLength(0);
    } finally {
      await failing.close();
      down.close();
    }
  });

  it('rejects an invalid or stale signature with 400 and records nothing', async () => {
    await startedSession();
    const event = {
      id: 'evt_bad',
      type: 'identity.verification_session.verified',
      data: { object: { id: 'vs_stripe_123', object: 'identity.verification_session' } },
    };
    const wrong = await webhook(event, { secret: 'whsec_wrong' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('bad_request');
    const stale = await webhook(event, { at: Math.floor(clock.now().getTime() / 1000) - 301 });
    expect(stale.status).toBe(400);
    expect(await h.deps.db('kyc_webhook_events')).toHaveLength(0);
  });
});
