import request from 'supertest';
import { Wallet } from 'ethers';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { createSession, poll, SCREENING_ENV, SESSION_TABLES } from '../sessions/support';
import { challengeFrom, csrfFrom } from './support';

describe('the verify page (server-rendered)', () => {
  let h: Harness;
  let clock: TestClock;
  let apiKey: string;
  beforeAll(async () => {
    clock = new TestClock(new Date('2026-03-01T12:00:00Z'));
    h = await createHarness({ env: SCREENING_ENV, overrides: { clock } });
  });
  beforeEach(async () => {
    await resetTables(h.deps, SESSION_TABLES);
    clock.set('2026-03-01T12:00:00Z');
    ({ apiKey } = await createMerchant(h.deps, { displayName: 'Acme <Books> & Co' }));
  });
  afterAll(() => h.close());

  const identity = { full_name: 'Alice Example', date_of_birth: '1990-04-12', country: 'DE', document_number: 'P1234567' };

  async function submit(sessionId: string, path: string, fields: Record<string, string>) {
    const page = await request(h.app).get(`/verify/${sessionId}`);
    const { cookie, token } = csrfFrom(page);
    return request(h.app).post(`/verify/${sessionId}/${path}`).set('Cookie', cookie).type('form').send({ csrf: token, ...fields });
  }

  it('shows the merchant display name and product name, escaped, with labelled fields and a strict CSP', async () => {
    const s = await createSession(h, apiKey, { product_name: '<script>alert("x")</script>' });
    const res = await request(h.app).get(`/verify/${s.session_id}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('Acme &lt;Books&gt; &amp; Co');
    expect(res.text).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(res.text).not.toContain('<script>alert');
    for (const label of ['Full legal name', 'Date of birth', 'Country of residence', 'Document number']) expect(res.text).toContain(`>${label}</label>`);
    const csp = res.headers['content-security-policy'];
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.text).toContain(`<script nonce="${nonce}">`);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['set-cookie'][0]).toMatch(/HttpOnly; SameSite=Strict/);
  });

  it('refuses POSTs without a valid CSRF token, or with a token for another session', async () => {
    const s = await createSession(h, apiKey);
    const other = await createSession(h, apiKey);
    const noToken = await request(h.app).post(`/verify/${s.session_id}/identity`).type('form').send(identity);
    expect(noToken.status).toBe(403);
    const page = await request(h.app).get(`/verify/${other.session_id}`);
    const { cookie, token } = csrfFrom(page);
    const crossSession = await request(h.app).post(`/verify/${s.session_id}/identity`).set('Cookie', cookie).type('form').send({ csrf: token, ...identity });
    expect(crossSession.status).toBe(403);
    expect((await h.deps.db('sessions').where({ id: s.session_id }).first()).status).toBe('pending');
  });

  it('re-renders the form with 400 and a message per invalid field, keeping escaped values', async () => {
    const s = await createSession(h, apiKey);
    const res = await submit(s.session_id, 'identity', { full_name: '"><b>x', date_of_birth: '2090-01-01', country: 'ZZ', document_number: '!' });
    expect(res.status).toBe(400);
    for (const field of ['date_of_birth', 'country', 'document_number']) expect(res.text).toContain(`id="${field}-error"`);
    expect(res.text).toContain('value="&quot;&gt;&lt;b&gt;x"');
  });

  it('moves the session to verified through the sandbox form and links a pasted EVM signature', async () => {
    const s = await createSession(h, apiKey);
    const submitted = await submit(s.session_id, 'identity', identity);
    expect(submitted.status).toBe(303);
    expect(submitted.headers.location).toBe(`/verify/${s.session_id}`);
    const page = await request(h.app).get(`/verify/${s.session_id}`);
    expect(page.text).toContain('id="status-verified"');
    const wallet = Wallet.createRandom();
    const challenge = challengeFrom(page.text);
    const { cookie, token } = csrfFrom(page);
    const signature = await wallet.signMessage(challenge.message);
    const claim = (sig: string) =>
      request(h.app).post(`/verify/${s.session_id}/wallet`).set('Cookie', cookie).type('form')
        .send({ csrf: token, challenge_id: challenge.id, network: 'evm', address: wallet.address, signature: sig });
    const linked = await claim(signature);
    expect(linked.status).toBe(303);
    const after = await request(h.app).get(`/verify/${s.session_id}?wallet=linked`);
    expect(after.text).toContain(wallet.address.toLowerCase());
    const replay = await claim(signature);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('This challenge was already used');
    expect((await poll(h, s.session_id, s.poll_secret)).body.status).toBe('verified');
  });

  it('shows a clear page for failed and flagged outcomes', async () => {
    const failed = await createSession(h, apiKey);
    await submit(failed.session_id, 'identity', { ...identity, document_number: 'FAIL-1' });
    expect((await request(h.app).get(`/verify/${failed.session_id}`)).text).toContain('id="status-failed"');
    const flagged = await createSession(h, apiKey);
    await submit(flagged.session_id, 'identity', { full_name: 'Dmitri Vorontsov', date_of_birth: '1971-03-14', country: 'RU', document_number: 'RU1' });
    const page = await request(h.app).get(`/verify/${flagged.session_id}`);
    expect(page.text).toContain('id="status-flagged"');
    expect(page.text).toContain('compliance@kya.dev');
  });

  it('shows an expired page after the TTL and a not-found page for unknown ids', async () => {
    const s = await createSession(h, apiKey);
    clock.advance(3600_000);
    const expired = await request(h.app).get(`/verify/${s.session_id}`);
    expect(expired.status).toBe(410);
    expect(expired.text).toContain('This verification link has expired');
    const posted = await request(h.app).post(`/verify/${s.session_id}/identity`).type('form').send(identity);
    expect(posted.status).toBe(410);
    const unknown = await request(h.app).get('/verify/vs_unknown000000000000000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('This verification link is not valid');
  });
});
