// The verify page as a person sees it, in headless Chromium at phone (375 px) and desktop (1280 px) widths:
// no sideways scrolling even with long unbroken text, a sandbox banner and a privacy line, failed fields
// marked for assistive technology with focus on the first one, the wallet step only after the identity step
// (naming the wallet a merchant refused, signing with an injected EIP-1193 wallet), "return to your agent"
// only when the agent has what it needs, a failure page that says what to do, and axe-core finding no
// serious or critical violation on any of these states. Screenshots go to test-output/verify/trust/; with
// DOCS_SCREENSHOTS=1 the documentation screenshots in docs/ are rewritten too.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium, servedHarness } from '../support/browser';
import { seriousViolations } from '../support/axe';
import { Wallet, toUtf8String } from 'ethers';
import { createMerchant, resetTables, type Harness } from '../support/harness';
import { SCREENING_ENV, SESSION_TABLES } from '../sessions/support';

jest.setTimeout(120_000);

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output/verify/trust');
const DOCS = process.env.DOCS_SCREENSHOTS === '1' ? path.join(ROOT, 'docs') : null;
const PHONE = { width: 375, height: 800 };
const DESKTOP = { width: 1280, height: 900 };

describe('a verify page people trust', () => {
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
    ({ apiKey } = await createMerchant(h.deps, { name: 'Northwind Coffee Roasters', displayName: 'Northwind Coffee Roasters' }));
  });
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    server?.close();
  });

  async function api(method: string, url: string, body?: unknown) {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  }

  async function newSession(productName: string) {
    const res = await api('POST', '/v1/sessions', { product_name: productName, context: 'browser test' });
    expect(res.status).toBe(200);
    return res.body as { session_id: string; poll_secret: string; verify_url: string };
  }

  async function openPage(url: string, viewport = PHONE, init?: (page: Page) => Promise<void>) {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
    const page = await context.newPage();
    if (init) await init(page);
    await page.goto(url);
    return { page, close: () => context.close() };
  }

  async function shot(page: Page, name: string, docsName?: string) {
    await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
    if (DOCS && docsName) await page.screenshot({ path: path.join(DOCS, docsName), fullPage: true });
  }

  // Browser-side expressions are strings: this project compiles without the DOM library.
  const noSidewaysScroll = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');

  async function fillIdentity(page: Page, person: { name: string; dob: string; country: string; doc: string }) {
    await page.getByLabel('Full legal name').fill(person.name);
    await page.getByLabel('Date of birth').fill(person.dob);
    await page.getByLabel('Country of residence').selectOption(person.country);
    await page.getByLabel('Document number').fill(person.doc);
  }

  it('shows merchant, product, sandbox banner and privacy line without sideways scrolling at 375 and 1280 px', async () => {
    const s = await newSession('Burr grinder — 40 mm conical steel burrs, 129.00 USD');
    for (const [viewport, name, docsName] of [
      [PHONE, 'open-phone', 'verify-page-phone.png'],
      [DESKTOP, 'open-desktop', 'verify-page.png'],
    ] as const) {
      const { page, close } = await openPage(s.verify_url, viewport);
      await expect(page.locator('#merchant-name').textContent()).resolves.toBe('Northwind Coffee Roasters');
      await expect(page.locator('#sandbox-banner').textContent()).resolves.toContain('Do not enter real personal data');
      const privacy = await page.locator('#privacy').textContent();
      expect(privacy).toContain('Northwind Coffee Roasters sees only the outcome');
      expect(privacy).toContain('never your documents or personal details');
      expect(privacy).toContain('compliance@kya.dev');
      // the wallet step waits until the identity step has succeeded
      expect(await page.locator('#wallet-heading').count()).toBe(0);
      expect(await noSidewaysScroll(page)).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, name, docsName);
      await close();
    }
  });

  it('wraps long unbroken text on a phone', async () => {
    const s = await newSession(`Subscription-${'x'.repeat(180)}`);
    const { page, close } = await openPage(s.verify_url, PHONE);
    expect(await noSidewaysScroll(page)).toBe(true);
    await shot(page, 'long-name-phone');
    await close();
  });

  it('marks every failed field (aria-invalid, aria-describedby), focuses the first and lists the errors', async () => {
    const s = await newSession('Burr grinder');
    const { page, close } = await openPage(s.verify_url, PHONE);
    await page.getByLabel('Full legal name').fill('A');
    await page.getByLabel('Date of birth').fill('2999-01-01');
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#error-summary').waitFor();
    const fields = await page.evaluate(`['full_name', 'date_of_birth', 'country', 'document_number'].map((id) => {
      const el = document.getElementById(id);
      const described = (el.getAttribute('aria-describedby') || '').split(' ');
      const texts = described.map((d) => (document.getElementById(d) || {}).textContent || '');
      return { id, invalid: el.getAttribute('aria-invalid'), error: texts.find((t) => /Enter|Choose/.test(t)) || null };
    })`);
    expect(fields).toEqual([
      { id: 'full_name', invalid: 'true', error: 'Enter your full legal name (2 to 200 characters).' },
      { id: 'date_of_birth', invalid: 'true', error: 'Enter a real date of birth (day, month and year), not in the future.' },
      { id: 'country', invalid: 'true', error: 'Choose your country of residence.' },
      { id: 'document_number', invalid: 'true', error: 'Enter the document number (3 to 64 letters, digits, spaces or dashes).' },
    ]);
    expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe('full_name');
    // the date hint describes the date control as the browser shows it, never a format it does not display
    expect(await page.locator('#date_of_birth-hint').textContent()).toBe('Day, month and year, as on your document.');
    expect(await page.content()).not.toContain('YYYY-MM-DD');
    expect(await page.locator('#error-summary li').allTextContents()).toHaveLength(4);
    expect(await seriousViolations(page)).toEqual([]);
    await shot(page, 'errors-phone', 'verify-page-errors-phone.png');
    await close();
  });

  it('after a wallet-mode denial: names the refused wallet, signs it with the browser wallet, then says to return to the agent', async () => {
    const wallet = Wallet.createRandom();
    const denial = await api('POST', '/v1/assess', { address: wallet.address, policy: { require_kyc: true } });
    expect(denial.body).toMatchObject({ decision: 'deny', decision_reasons: ['kyc_required'], verify_url: expect.stringContaining('/v1/assess/verify/') });

    const signer = async (page: Page) => {
      await page.exposeFunction('kyaTestSign', (hexMessage: string) => wallet.signMessage(toUtf8String(hexMessage)));
      // An injected EIP-1193 provider whose personal_sign is the test's real key.
      await page.addInitScript({
        content: `window.ethereum = { request: async ({ method, params }) => method === 'eth_requestAccounts' ? [${JSON.stringify(wallet.address)}] : window.kyaTestSign(params[0]) };`,
      });
    };
    const { page, close } = await openPage(denial.body.verify_url, PHONE, signer);
    await fillIdentity(page, { name: 'Alice Example', dob: '1990-04-12', country: 'DE', doc: 'P1234567' });
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#status-verified').waitFor();

    const lower = wallet.address.toLowerCase();
    await expect(page.locator('#wallet-required').textContent()).resolves.toContain(lower);
    expect(await page.locator('#return-to-agent').count()).toBe(0);
    await expect(page.locator('#wallet-heading').textContent()).resolves.toBe('Step 2 — Prove this wallet is yours');
    await expect(page.getByLabel('Wallet address').inputValue()).resolves.toBe(lower);
    expect(await page.getByRole('button', { name: 'Sign with my wallet' }).isVisible()).toBe(true);
    expect(await page.getByRole('button', { name: 'Copy message' }).isVisible()).toBe(true);
    expect(await noSidewaysScroll(page)).toBe(true);
    // the message wraps inside its box instead of running off the screen
    expect(await page.locator('#challenge-message').evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await shot(page, 'wallet-step-phone', 'verify-page-wallet-phone.png');
    await page.setViewportSize(DESKTOP);
    await shot(page, 'wallet-step-desktop', 'verify-page-wallet-desktop.png');
    await page.setViewportSize(PHONE);

    await page.getByRole('button', { name: 'Sign with my wallet' }).click();
    await page.locator('#wallet-linked').waitFor();
    await expect(page.locator('#linked-wallets').textContent()).resolves.toContain(lower);
    await expect(page.locator('#return-to-agent').textContent()).resolves.toContain('You can return to your agent now');
    expect(await page.locator('#wallet-required').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await shot(page, 'wallet-linked-phone');
    await close();

    const again = await api('POST', '/v1/assess', { address: wallet.address, policy: { require_kyc: true } });
    expect(again.body.decision).toBe('allow');
  });

  it('without a wallet denial the verified page says to return to the agent and offers an optional wallet', async () => {
    const s = await newSession('Burr grinder');
    const { page, close } = await openPage(s.verify_url, DESKTOP);
    await fillIdentity(page, { name: 'Alice Example', dob: '1990-04-12', country: 'DE', doc: 'P1234567' });
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#return-to-agent').waitFor();
    await expect(page.locator('#wallet-heading').textContent()).resolves.toBe('Step 2 (optional) — Prove a wallet is yours');
    // no injected wallet in this browser: no sign button, the copy-and-paste way instead
    expect(await page.getByRole('button', { name: 'Sign with my wallet' }).isVisible()).toBe(false);
    expect(await seriousViolations(page)).toEqual([]);
    await shot(page, 'verified-desktop');
    await close();
  });

  it('on failure says why in general terms and what can be done: a new session from the agent, or support', async () => {
    const s = await newSession('Burr grinder');
    const { page, close } = await openPage(s.verify_url, PHONE);
    await fillIdentity(page, { name: 'Bob Blurry', dob: '1988-08-08', country: 'US', doc: 'FAIL-000' });
    await page.getByRole('button', { name: 'Verify identity' }).click();
    await page.locator('#status-failed').waitFor();
    const text = (await page.locator('main').textContent())!;
    expect(text).toContain('We could not verify your identity.');
    expect(text).toContain('Ask your agent to start a new verification');
    expect(text).toContain(`reference ${s.session_id}`);
    expect(text).toContain('compliance@kya.dev');
    expect(text).not.toContain('return to your agent');
    expect(await seriousViolations(page)).toEqual([]);
    await shot(page, 'failed-phone', 'verify-page-failed-phone.png');
    await close();
  });
});
