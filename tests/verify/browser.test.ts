// Headless Chromium (Debian `chromium`, driven by playwright-core) walks the real verify page: create a session
// → open verify_url → fill the sandbox form by its labels → claim an EVM wallet with a pasted signature → poll
// → token; plus the failed and flagged paths. Screenshots of every step go to test-output/verify/.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium, servedHarness } from '../support/browser';
import { Wallet } from 'ethers';
import { createMerchant, resetTables, type Harness } from '../support/harness';
import { SCREENING_ENV, SESSION_TABLES } from '../sessions/support';

jest.setTimeout(90_000);

const OUT = path.resolve(__dirname, '../../test-output/verify');

describe('verify page in headless Chromium', () => {
  let h: Harness;
  let server: http.Server;
  let base: string;
  let browser: Browser;
  let apiKey: string;

  beforeAll(async () => {
    fs.mkdirSync(OUT, { recursive: true });
    ({ h, base, server } = await servedHarness(SCREENING_ENV));
    browser = await launchChromium();
  });
  beforeEach(async () => {
    await resetTables(h.deps, SESSION_TABLES);
    ({ apiKey } = await createMerchant(h.deps, { displayName: 'Acme Books' }));
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    server?.close();
  });

  async function api(method: string, url: string, headers: Record<string, string>, body?: unknown) {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  async function newSession(productName: string) {
    const res = await api('POST', '/v1/sessions', { 'X-API-Key': apiKey }, { product_name: productName, context: 'browser test' });
    expect(res.status).toBe(200);
    return res.body as { session_id: string; poll_secret: string; verify_url: string; poll_url: string };
  }

  const pollOnce = (s: { session_id: string; poll_secret: string }) => api('GET', `/v1/sessions/${s.session_id}`, { 'X-Poll-Secret': s.poll_secret });

  async function fillIdentity(page: Page, person: { name: string; dob: string; country: string; doc: string }) {
    await page.getByLabel('Full legal name').fill(person.name);
    await page.getByLabel('Date of birth').fill(person.dob);
    await page.getByLabel('Country of residence').selectOption(person.country);
    await page.getByLabel('Document number').fill(person.doc);
  }

  it('verifies, claims an EVM wallet with a pasted signature, and the agent collects the token once', async () => {
    const s = await newSession('<script>alert("pwned")</script> Premium plan');
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });

    await page.goto(s.verify_url);
    await expect(page.locator('#merchant-name').textContent()).resolves.toBe('Acme Books');
    await expect(page.locator('#product-name').textContent()).resolves.toBe('<script>alert("pwned")</script> Premium plan');
    await page.screenshot({ path: path.join(OUT, '01-open.png'), fullPage: true });
    expect((await pollOnce(s)).body.status).toBe('pending');

    await fillIdentity(page, { name: 'Alice Example', dob: '1990-04-12', country: 'DE', doc: 'P1234567' });
    await page.screenshot({ path: path.join(OUT, '02-identity-filled.png'), fullPage: true });
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#status-verified').waitFor();
    await page.screenshot({ path: path.join(OUT, '03-verified.png'), fullPage: true });

    const wallet = Wallet.createRandom();
    const message = await page.getByLabel('Message to sign').inputValue();
    expect(message).toContain(`Session: ${s.session_id}`);
    expect(message).toContain(`Domain: ${new URL(base).host}`);
    const signature = await wallet.signMessage(message);
    await page.getByLabel('Wallet network').selectOption('evm');
    await page.getByLabel('Wallet address').fill(wallet.address);
    await page.getByLabel('Signature').fill(signature);
    await page.screenshot({ path: path.join(OUT, '04-wallet-filled.png'), fullPage: true });
    await page.getByRole('button', { name: 'Link wallet' }).click();
    await page.locator('#wallet-linked').waitFor();
    await expect(page.locator('#linked-wallets').textContent()).resolves.toContain(wallet.address.toLowerCase());
    await page.screenshot({ path: path.join(OUT, '05-wallet-linked.png'), fullPage: true });

    const verified = await pollOnce(s);
    expect(verified.body).toMatchObject({ status: 'verified', operator_token: expect.stringMatching(/^opc_/), token_ttl_seconds: 86400 });
    expect((await pollOnce(s)).body.status).toBe('consumed');
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    const op = await h.deps.db('accounts').where({ id: session.operator_account_id }).first();
    expect(op).toMatchObject({ kind: 'operator', kyc_status: 'verified', verification_level: 'kyc_verified', age_bracket: '21+' });
    expect(await h.deps.db('operator_wallets').where({ account_id: op.id, address: wallet.address.toLowerCase() })).toHaveLength(1);
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it('lets only the browser that verified link a wallet: a second browser with the same URL is refused', async () => {
    const s = await newSession('Premium plan');
    const verifier = await browser.newContext({ javaScriptEnabled: false });
    const other = await browser.newContext(); // the merchant, or whoever else got hold of the link
    const mine = await verifier.newPage();
    const theirs = await other.newPage();

    // The other browser opens the link while it is pending, so it holds a valid CSRF cookie + token.
    await theirs.goto(s.verify_url);
    const theirCsrf = await theirs.locator('input[name="csrf"]').first().inputValue();

    await mine.goto(s.verify_url);
    await fillIdentity(mine, { name: 'Alice Example', dob: '1990-04-12', country: 'DE', doc: 'P1234567' });
    await mine.getByRole('button', { name: 'Verify identity' }).click();
    await mine.locator('#status-verified').waitFor();
    const message = await mine.getByLabel('Message to sign').inputValue();
    const challengeId = await mine.locator('input[name="challenge_id"]').inputValue();
    const wallet = Wallet.createRandom();
    const signature = await wallet.signMessage(message);

    await theirs.goto(s.verify_url);
    await theirs.locator('#status-verified').waitFor();
    expect(await theirs.getByLabel('Message to sign').count()).toBe(0);
    await expect(theirs.locator('#wallet-other-browser').textContent()).resolves.toContain('only be linked from the browser that completed the identity check');
    await theirs.screenshot({ path: path.join(OUT, '20-other-browser.png'), fullPage: true });

    // Even with the verifier's challenge and a valid signature, the other browser's claim is refused.
    const [refused] = await Promise.all([
      theirs.waitForResponse((r) => r.url().endsWith(`/verify/${s.session_id}/wallet`)),
      theirs.evaluate(
        ({ action, fields }) => {
          const document = (globalThis as any).document;
          const form = document.createElement('form');
          form.method = 'post';
          form.action = action;
          for (const [name, value] of Object.entries(fields)) {
            const input = document.createElement('input');
            input.type = 'hidden';
            input.name = name;
            input.value = value;
            form.appendChild(input);
          }
          document.body.appendChild(form);
          form.submit();
        },
        {
          action: `/verify/${s.session_id}/wallet`,
          fields: { csrf: theirCsrf, challenge_id: challengeId, network: 'evm', address: wallet.address, signature },
        },
      ),
    ]);
    expect(refused.status()).toBe(403);
    await theirs.locator('#claim-refused').waitFor();
    await expect(theirs.locator('#claim-refused').textContent()).resolves.toBe('This browser cannot link a wallet');
    await theirs.screenshot({ path: path.join(OUT, '21-other-browser-refused.png'), fullPage: true });
    expect(await h.deps.db('operator_wallets')).toHaveLength(0);

    // The verifying browser links the same wallet with the same signature.
    await mine.getByLabel('Wallet address').fill(wallet.address);
    await mine.getByLabel('Signature').fill(signature);
    await mine.getByRole('button', { name: 'Link wallet' }).click();
    await mine.locator('#wallet-linked').waitFor();
    const session = await h.deps.db('sessions').where({ id: s.session_id }).first();
    expect(await h.deps.db('operator_wallets')).toEqual([
      expect.objectContaining({ account_id: session.operator_account_id, address: wallet.address.toLowerCase() }),
    ]);
    await verifier.close();
    await other.close();
  });

  it('shows the failed outcome and the agent sees verification_failed', async () => {
    const s = await newSession('Failing demo');
    const page = await browser.newPage();
    await page.goto(s.verify_url);
    await fillIdentity(page, { name: 'Bob Blurry', dob: '1988-08-08', country: 'US', doc: 'FAIL-000' });
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#status-failed').waitFor();
    await page.screenshot({ path: path.join(OUT, '06-failed.png'), fullPage: true });
    expect((await pollOnce(s)).body.next_steps.action).toBe('verification_failed');
    await page.close();
  });

  it('flags a name-screening match and the agent sees contact_support', async () => {
    const s = await newSession('Flagged demo');
    const page = await browser.newPage();
    await page.goto(s.verify_url);
    await fillIdentity(page, { name: 'Dmitri Vorontsov', dob: '1971-03-14', country: 'RU', doc: 'RU5550001' });
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#status-flagged').waitFor();
    await page.screenshot({ path: path.join(OUT, '07-flagged.png'), fullPage: true });
    const res = await pollOnce(s);
    expect(res.body.next_steps).toMatchObject({ action: 'contact_support', support_email: 'compliance@kya.dev' });
    await page.close();
  });

  it('refuses an invalid form with field messages and keeps working with JavaScript on (CSP allows the nonce script only)', async () => {
    const s = await newSession('Validation demo');
    const page = await browser.newPage();
    const cspErrors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') cspErrors.push(m.text());
    });
    await page.goto(s.verify_url);
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#full_name-error').waitFor();
    await page.screenshot({ path: path.join(OUT, '08-validation.png'), fullPage: true });
    expect(await page.locator('.error').count()).toBe(4);
    expect(cspErrors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    await page.close();
  });
});
