// Dashboard sign-in rules below the browser: the admin CLI's one-time link (15 minutes, single use), the idle
// timeout, rate-limited failures, CSRF on signed-in forms, and the strict page headers.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createMerchant, useClockedHarness } from '../support/harness';
import { admin, baseEnv } from '../support/processes';
import { TEST_DATABASE_URL, TEST_PII_KEY, TEST_REDIS_URL, TEST_SERVER_SECRET } from '../support/env';

jest.setTimeout(60_000);

describe('dashboard sign-in', () => {
  const { h, clock } = useClockedHarness('2026-05-01T10:00:00.000Z', ['accounts']);
  const tokenOf = (url: string) => url.split('/').pop()!;

  it('account login-link prints a link that signs in once', async () => {
    const m = await createMerchant(h.deps);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-cli-'));
    try {
      const env = baseEnv({
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_URL: TEST_REDIS_URL,
        SERVER_SECRET: TEST_SERVER_SECRET,
        PII_ENCRYPTION_KEY: TEST_PII_KEY,
        DATA_DIR: dataDir,
        PUBLIC_BASE_URL: 'https://kya.example',
      });
      const out = await admin(['account', 'login-link', m.accountId], env);
      expect(out.code).toBe(0);
      expect(out.json).toEqual({
        url: expect.stringMatching(/^https:\/\/kya\.example\/dashboard\/login\/dl_[0-9A-Za-z]{20,64}$/),
        expires_at: expect.any(String),
      });
      clock.set(new Date()); // the CLI used the real clock
      const token = tokenOf(out.json.url);
      expect(await h.deps.services.dashboard.signInWithLink(token)).toMatchObject({ accountId: m.accountId });
      expect(await h.deps.services.dashboard.signInWithLink(token)).toBeNull();
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a link after 15 minutes', async () => {
    const m = await createMerchant(h.deps);
    const { url } = await h.deps.services.dashboard.createLoginLink(m.accountId);
    clock.advance(15 * 60_000 + 1);
    expect(await h.deps.services.dashboard.signInWithLink(tokenOf(url))).toBeNull();
  });

  it('ends a session after the idle timeout and slides it on use', async () => {
    const m = await createMerchant(h.deps);
    const s = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!;
    clock.advance(29 * 60_000);
    expect(await h.deps.services.dashboard.resume(s.sessionId)).toBe(m.accountId);
    clock.advance(29 * 60_000);
    expect(await h.deps.services.dashboard.resume(s.sessionId)).toBe(m.accountId);
    clock.advance(30 * 60_000 + 1);
    expect(await h.deps.services.dashboard.resume(s.sessionId)).toBeNull();
    const page = await request(h.app).get('/dashboard').set('Cookie', `kya_dashboard=${s.sessionId}`);
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/dashboard/signin');
  });

  it('stores only a hash of the session id and sends strict headers', async () => {
    const m = await createMerchant(h.deps);
    const s = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!;
    const rows = await h.deps.db('dashboard_sessions').select('id_hash');
    expect(rows).toHaveLength(1);
    expect(rows[0].id_hash).not.toContain(s.sessionId);
    const page = await request(h.app).get('/dashboard').set('Cookie', `kya_dashboard=${s.sessionId}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/default-src 'none'; style-src 'nonce-[^']+'; script-src 'nonce-[^']+'/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(page.text).toContain('<a href="/docs">API reference</a>');
  });

  it('refuses a signed-in form without the CSRF token', async () => {
    const m = await createMerchant(h.deps);
    const s = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!;
    const res = await request(h.app).post('/dashboard/keys/rotate').set('Cookie', `kya_dashboard=${s.sessionId}`).type('form').send({ csrf: 'forged' });
    expect(res.status).toBe(403);
    expect(await h.deps.services.accounts.authenticate(m.apiKey)).not.toBeNull();
  });

  it('rate-limits failed sign-ins per address across both forms: the 11th attempt in 15 minutes is refused, with Retry-After, even with the right key or link', async () => {
    const m = await createMerchant(h.deps);
    const agent = request.agent(h.app);
    const form = await agent.get('/dashboard/signin');
    const csrf = /name="csrf" value="([^"]+)"/.exec(form.text)![1];
    for (let i = 0; i < 10; i++) {
      expect(
        (
          await agent
            .post('/dashboard/signin')
            .type('form')
            .send({ csrf, api_key: `as_live_wrong${i}` })
        ).status,
      ).toBe(401);
    }
    const blocked = await agent.post('/dashboard/signin').type('form').send({ csrf, api_key: m.apiKey });
    expect(blocked.status).toBe(429);
    expect(blocked.headers['retry-after']).toBe('900');
    expect(blocked.text).toContain('Too many failed sign-ins. Try again in 15 minutes.');

    // The one-time link form counts against the same budget: a valid link is refused from this address too.
    const { url } = await h.deps.services.dashboard.createLoginLink(m.accountId);
    const linkForm = await agent.get(new URL(url).pathname);
    const linkCsrf = /name="csrf" value="([^"]+)"/.exec(linkForm.text)![1];
    const linkBlocked = await agent
      .post('/dashboard/login')
      .type('form')
      .send({ csrf: linkCsrf, token: tokenOf(url) });
    expect(linkBlocked.status).toBe(429);
    expect(linkBlocked.headers['retry-after']).toBe('900');
    expect(linkBlocked.text).toContain('Too many failed sign-ins. Try again in 15 minutes.');
    expect(await h.deps.services.dashboard.signInWithLink(tokenOf(url))).not.toBeNull();
  });
});
