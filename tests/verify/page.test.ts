import request from 'supertest';
import { Wallet } from 'ethers';
import { createHarness, createMerchant, resetTables, TestClock, type Harness } from '../support/harness';
import { createSession, poll, SCREENING_ENV, SESSION_TABLES } from '../sessions/support';
import { challengeFrom, claimCookieFrom, csrfFrom } from './support';

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
    return request(h.app)
      .post(`/verify/${sessionId}/${path}`)
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf: token, ...fields });
  }

  it("shows the merchant's logo and support email from its settings, and a letter placeholder without a logo", async () => {
    const plain = await request(h.app).get(`/verify/${(await createSession(h, apiKey)).session_id}`);
    expect(plain.text).not.toContain('id="merchant-logo"');
    expect(plain.text).toContain('<span class="logo" aria-hidden="true">A</span>');
    await h.deps
      .db('accounts')
      .where({ kind: 'merchant' })
      .update({ logo_url: 'https://cdn.example.com/acme.png?size=88&v="2"', support_email: 'help@acme.example' });
    const res = await request(h.app).get(`/verify/${(await createSession(h, apiKey)).session_id}`);
    expect(res.text).toContain(
      '<img class="logo" id="merchant-logo" src="https://cdn.example.com/acme.png?size=88&amp;v=&quot;2&quot;" alt="" width="44" height="44">',
    );
    expect(res.text).toContain('<a href="mailto:help@acme.example">help@acme.example</a>');
    expect(res.headers['content-security-policy']).toContain("img-src 'self' data: https:;");
  });

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
    const crossSession = await request(h.app)
      .post(`/verify/${s.session_id}/identity`)
      .set('Cookie', cookie)
      .type('form')
      .send({ csrf: token, ...identity });
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
    const claimCookie = claimCookieFrom(submitted)!;
    expect(([] as string[]).concat(submitted.headers['set-cookie']).find((c) => c.startsWith('kya_verify_claim='))).toMatch(
      new RegExp(`^kya_verify_claim=[0-9A-Za-z]{40,}; Path=/verify/${s.session_id}; Max-Age=3600; HttpOnly; SameSite=Strict$`),
    );
    const page = await request(h.app).get(`/verify/${s.session_id}`).set('Cookie', claimCookie);
    expect(page.text).toContain('id="status-verified"');
    const wallet = Wallet.createRandom();
    const challenge = challengeFrom(page.text);
    const { cookie, token } = csrfFrom(page);
    const signature = await wallet.signMessage(challenge.message);
    const claim = (sig: string) =>
      request(h.app)
        .post(`/verify/${s.session_id}/wallet`)
        .set('Cookie', `${cookie}; ${claimCookie}`)
        .type('form')
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

  it('lets only the browser that completed the identity step link a wallet, and only until the session expires', async () => {
    const s = await createSession(h, apiKey);
    const wallet = Wallet.createRandom();
    const stranger = async () => {
      const page = await request(h.app).get(`/verify/${s.session_id}`);
      return { page, ...csrfFrom(page) };
    };
    const post = (cookie: string, token: string, challengeId: string, signature: string) =>
      request(h.app)
        .post(`/verify/${s.session_id}/wallet`)
        .set('Cookie', cookie)
        .type('form')
        .send({ csrf: token, challenge_id: challengeId, network: 'evm', address: wallet.address, signature });

    // Before the identity step nobody can claim, not even with a well-formed form.
    const early = await stranger();
    expect(early.page.text).not.toContain('id="challenge-message"');
    const tooEarly = await post(early.cookie, early.token, '00000000-0000-4000-8000-000000000000', '0x' + '1'.repeat(130));
    expect(tooEarly.status).toBe(403);
    expect(tooEarly.text).toContain('Wallet linking is closed');

    const submitted = await submit(s.session_id, 'identity', identity);
    const claimCookie = claimCookieFrom(submitted)!;
    const mine = await request(h.app).get(`/verify/${s.session_id}`).set('Cookie', claimCookie);
    const challenge = challengeFrom(mine.text);
    const signature = await wallet.signMessage(challenge.message);

    // The merchant (or anyone else with the link, holding a CSRF pair from opening it earlier): sees the outcome,
    // no wallet form, and is refused with a 403 page even with the right challenge and a valid signature.
    const other = await request(h.app).get(`/verify/${s.session_id}`).set('Cookie', early.cookie);
    expect(other.status).toBe(200);
    expect(other.text).toContain('id="status-verified"');
    expect(other.text).not.toContain('id="challenge-message"');
    expect(other.text).toContain('id="wallet-other-browser"');
    for (const cookie of [early.cookie, `${early.cookie}; kya_verify_claim=${'A'.repeat(43)}`]) {
      const refused = await post(cookie, early.token, challenge.id, signature);
      expect(refused.status).toBe(403);
      expect(refused.headers['content-type']).toMatch(/^text\/html/);
      expect(refused.text).toContain('This browser cannot link a wallet');
      expect(refused.text).toContain('Wallets can only be linked from the browser that completed the identity check');
    }
    expect(await h.deps.db('operator_wallets')).toHaveLength(0);

    // The verifying browser can; once the session has expired it cannot any more.
    const csrf = csrfFrom(mine);
    expect((await post(`${csrf.cookie}; ${claimCookie}`, csrf.token, challenge.id, signature)).status).toBe(303);
    expect(await h.deps.db('operator_wallets')).toHaveLength(1);
    clock.advance(3600_000);
    const next = Wallet.createRandom();
    const late = await request(h.app)
      .post(`/verify/${s.session_id}/wallet`)
      .set('Cookie', `${csrf.cookie}; ${claimCookie}`)
      .type('form')
      .send({ csrf: csrf.token, challenge_id: challenge.id, network: 'evm', address: next.address, signature: await next.signMessage(challenge.message) });
    expect(late.status).toBe(403);
    expect(late.text).toContain('Wallet linking is closed');
    expect((await request(h.app).get(`/verify/${s.session_id}`).set('Cookie', claimCookie)).text).not.toContain('id="challenge-message"');
  });

  it('names each bad field of the wallet form to the verifying browser, and refuses any other browser before judging its input', async () => {
    const s = await createSession(h, apiKey);
    const submitted = await submit(s.session_id, 'identity', identity);
    const claimCookie = claimCookieFrom(submitted)!;
    const mine = await request(h.app).get(`/verify/${s.session_id}`).set('Cookie', claimCookie);
    const challenge = challengeFrom(mine.text);
    const csrf = csrfFrom(mine);
    const wallet = Wallet.createRandom();
    const claim = (cookie: string, fields: Record<string, string | string[]>) =>
      request(h.app)
        .post(`/verify/${s.session_id}/wallet`)
        .set('Cookie', cookie)
        .type('form')
        .send({ csrf: csrf.token, ...fields });
    const walletError = (text: string) => /<p class="alert" role="alert" id="wallet-error">([^<]*)<\/p>/.exec(text)?.[1];
    const cases: Array<[Record<string, string | string[]>, string]> = [
      [
        { network: 'bitcoin', address: wallet.address, signature: '0x1', challenge_id: challenge.id },
        'Choose EVM or Solana. Enter a valid EVM wallet address.',
      ],
      [{ network: 'solana', address: wallet.address, signature: '0x1', challenge_id: challenge.id }, 'Enter a valid Solana wallet address.'],
      [
        { network: 'evm', address: '', signature: '', challenge_id: '' },
        'Enter a valid EVM wallet address. Paste the signature your wallet produced. The challenge is missing; reload the page.',
      ],
      [
        { network: 'evm', address: [wallet.address, wallet.address], signature: ' ', challenge_id: 'x' },
        'Enter a valid EVM wallet address. Paste the signature your wallet produced. The challenge is missing; reload the page.',
      ],
    ];
    for (const [fields, message] of cases) {
      const res = await claim(`${csrf.cookie}; ${claimCookie}`, fields);
      expect({ status: res.status, message: walletError(res.text) }).toEqual({ status: 400, message });
    }
    // Another browser (no claim cookie) sending the same bad input learns only that it may not link.
    const stranger = await claim(csrf.cookie, { network: 'bitcoin', address: 'nope' });
    expect(stranger.status).toBe(403);
    expect(stranger.text).toContain('This browser cannot link a wallet');
    expect(stranger.text).not.toContain('Choose EVM or Solana');
    // Surrounding spaces and a checksummed address are accepted; the wallet is stored in canonical form.
    const signature = await wallet.signMessage(challenge.message);
    const linked = await claim(`${csrf.cookie}; ${claimCookie}`, {
      network: ' evm ',
      address: ` ${wallet.address} `,
      signature: ` ${signature} `,
      challenge_id: challenge.id,
    });
    expect(linked.status).toBe(303);
    expect(await h.deps.db('operator_wallets').pluck('address')).toEqual([wallet.address.toLowerCase()]);
  });

  it('accepts a name with extra spaces and a lowercase country, storing them normalised', async () => {
    const s = await createSession(h, apiKey);
    const res = await submit(s.session_id, 'identity', { ...identity, full_name: '  Alice    Example ', country: ' de ', document_number: ' P1234567 ' });
    expect(res.status).toBe(303);
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    expect(session.status).toBe('verified');
    const operator = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(operator.jurisdiction).toBe('DE');
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
    expect(expired.text).toContain('Verification links are valid for one hour.');
    const posted = await request(h.app).post(`/verify/${s.session_id}/identity`).type('form').send(identity);
    expect(posted.status).toBe(410);
    const unknown = await request(h.app).get('/verify/vs_unknown000000000000000000000000');
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('This verification link is not valid');
  });
});
