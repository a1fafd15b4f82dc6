// The merchant dashboard in headless Chromium with JavaScript disabled, driven by its visible labels: sign-in
// with the API key and with a one-time link, rotating the key (the old one refused by the API, a reload showing
// nothing again), an Enterprise account adding and revoking a key, the display name reaching the verify page,
// activity filters and CSV export, a webhook endpoint, its delivery log and its removal. Every screenshotted
// page is checked with axe-core (no serious or critical violation). Screenshots at 375 px and 1280 px go to
// test-output/dashboard/ (DASHBOARD_SCREENSHOTS=docs writes them to docs/dashboard/, the copies the
// documentation shows).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { launchChromium } from '../support/browser';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { SESSION_TABLES } from '../sessions/support';
import { verifyAccount } from '../credentials/fixtures';
import { startReceiver, type Receiver } from '../webhooks/receiver';
import { seedAudit } from './support';
import { seriousViolations } from '../support/axe';

jest.setTimeout(120_000);

const SHOTS = path.resolve(__dirname, process.env.DASHBOARD_SCREENSHOTS === 'docs' ? '../../docs/dashboard' : '../../test-output/dashboard');

describe('dashboard in headless Chromium', () => {
  let h: Harness;
  let server: http.Server;
  let base: string;
  let browser: Browser;
  let receiver: Receiver;
  let merchant: { accountId: string; apiKey: string };
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    fs.mkdirSync(SHOTS, { recursive: true });
    let app: http.RequestListener | null = null;
    server = http.createServer((req, res) => app!(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h = await createHarness({ env: { PUBLIC_BASE_URL: base, WEBHOOK_RETRY_BASE_MS: '100' } });
    app = h.app;
    browser = await launchChromium();
    receiver = await startReceiver([200]);
  });
  beforeEach(async () => {
    await resetTables(h.deps, [...SESSION_TABLES, 'webhook_events']);
    merchant = await createMerchant(h.deps, { name: 'Acme Books Ltd', displayName: 'Acme Books', tier: 'paid' });
  });
  afterEach(async () => {
    for (const c of contexts.splice(0)) await c.close();
  });
  afterAll(async () => {
    await receiver?.close();
    await browser?.close();
    await h?.close();
    server?.close();
  });

  async function newPage(width = 1280): Promise<Page> {
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width, height: 900 }, acceptDownloads: true });
    contexts.push(context);
    return context.newPage();
  }

  async function signIn(page: Page, key = merchant.apiKey) {
    await page.goto(`${base}/dashboard`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** axe-core on the page as rendered (in a JavaScript-enabled page of its own: these pages run without). */
  async function expectAccessible(page: Page) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const copy = await context.newPage();
    await copy.setContent(await page.content());
    expect(await seriousViolations(copy)).toEqual([]);
  }

  async function shoot(page: Page, name: string) {
    await expectAccessible(page);
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  }

  const api = (method: string, url: string, key: string) => fetch(`${base}${url}`, { method, headers: { 'X-API-Key': key } });

  it('signs in with the API key (a wrong key is refused), shows the overview, and keeps the key out of the browser', async () => {
    await seedAudit(h.deps, merchant.accountId, 300);
    const page = await newPage();
    await page.goto(`${base}/dashboard/signin`);
    await shoot(page, '01-signin');
    await signIn(page, 'kya_live_wrong');
    await expect(page.getByRole('alert').textContent()).resolves.toBe('That API key is not valid.');
    await signIn(page);
    expect(new URL(page.url()).pathname).toBe('/dashboard');
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Overview');
    await expect(page.locator('#quota-use').textContent()).resolves.toMatch(/^\d+ \/ 10000$/);
    const decisions = await page.locator('#decisions').textContent();
    expect(decisions).toContain('kyc_required');
    expect(decisions).toContain('sanctions_flagged');
    await shoot(page, '02-overview');
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite])).toContainEqual(['kya_dashboard', true, 'Strict']);
    expect(JSON.stringify(cookies)).not.toContain(merchant.apiKey);
    // Signing out ends the session server-side.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(`${base}/dashboard/keys`);
    expect(new URL(page.url()).pathname).toBe('/dashboard/signin');
  });

  it('signs in once with a one-time link from the admin command; the link does not work twice', async () => {
    const { url } = await h.deps.services.dashboard.createLoginLink(merchant.accountId);
    const page = await newPage();
    await page.goto(url);
    await shoot(page, '03-login-link');
    await page.getByRole('button', { name: 'Continue to the dashboard' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Overview');
    const again = await newPage();
    await again.goto(url);
    await again.getByRole('button', { name: 'Continue to the dashboard' }).click();
    await expect(again.getByRole('alert').textContent()).resolves.toContain('This sign-in link is not valid');
  });

  it('rotates the API key: the new key is shown once and the old one is refused by the API at once', async () => {
    const page = await newPage();
    await signIn(page);
    expect((await api('GET', '/v1/credentials', merchant.apiKey)).status).toBe(200);
    await page.getByRole('link', { name: 'API keys' }).click();
    await h.deps.services.accounts.flushKeyUses();
    await page.reload();
    await expect(page.getByRole('columnheader', { name: 'Last used (UTC)' }).count()).resolves.toBe(1);
    await expect(page.locator('#keys tr:nth-child(2) td:nth-child(3)').textContent()).resolves.toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);
    // Below Enterprise there is one key: no add or revoke controls.
    await expect(page.getByRole('button', { name: 'Add an API key' }).count()).resolves.toBe(0);
    await shoot(page, '04-keys');
    await page.getByRole('button', { name: 'Rotate API key' }).click();
    expect(new URL(page.url()).pathname).toBe('/dashboard/keys');
    const newKey = (await page.locator('#new-key').textContent())!;
    expect(newKey.split('_').slice(0, 2)).toEqual(merchant.apiKey.split('_').slice(0, 2));
    expect(newKey).not.toBe(merchant.apiKey);
    expect(page.url()).not.toContain(newKey);
    await shoot(page, '05-keys-rotated');
    const old = await api('GET', '/v1/credentials', merchant.apiKey);
    expect(old.status).toBe(401);
    expect((await api('GET', '/v1/credentials', newKey)).status).toBe(200);
    // A reload does not post the form again (the new key keeps working) and does not show the key again.
    await page.reload();
    await expect(page.locator('#new-key').count()).resolves.toBe(0);
    expect((await api('GET', '/v1/credentials', newKey)).status).toBe(200);
  });

  it('Enterprise: adds a key, shown once, and revokes one after a confirmation step; the API refuses it at once', async () => {
    const big = await createMerchant(h.deps, { name: 'Globex Corporation', displayName: 'Globex', tier: 'enterprise' });
    const page = await newPage();
    await signIn(page, big.apiKey);
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Add an API key' }).click();
    const added = (await page.locator('#new-key').textContent())!;
    await expect(page.getByRole('status').textContent()).resolves.toContain('Your other keys keep working.');
    expect((await api('GET', '/v1/credentials', added)).status).toBe(200);
    await page.reload();
    await expect(page.locator('#new-key').count()).resolves.toBe(0);
    await shoot(page, '10-keys-enterprise');

    const prefix = added.slice(0, 12);
    await page.getByRole('link', { name: `Revoke key ${prefix}` }).click();
    await shoot(page, '11-key-revoke-confirm');
    await page.getByRole('link', { name: 'Cancel, keep the key' }).click();
    expect((await api('GET', '/v1/credentials', added)).status).toBe(200);
    await page.getByRole('link', { name: `Revoke key ${prefix}` }).click();
    await page.getByRole('button', { name: `Revoke key ${prefix}` }).click();
    await expect(page.getByRole('status').textContent()).resolves.toBe(`Key ${prefix} revoked: requests that present it are refused.`);
    expect((await api('GET', '/v1/credentials', added)).status).toBe(401);
    expect((await api('GET', '/v1/credentials', big.apiKey)).status).toBe(200);
    // One key left: it cannot be revoked, so no revoke link is offered.
    await expect(page.getByRole('link', { name: /^Revoke key/ }).count()).resolves.toBe(0);
  });

  it('changes the display name and the verify page shows it; refuses a non-https logo URL', async () => {
    const page = await newPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Logo URL (https)').fill('http://example.com/logo.png');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect(page.locator('#logo_url-error').textContent()).resolves.toBe('Enter an https:// URL of an image.');
    const logo = page.getByLabel('Logo URL (https)');
    await expect(Promise.all([logo.getAttribute('aria-invalid'), logo.getAttribute('aria-describedby')])).resolves.toEqual(['true', 'logo_url-error']);
    expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe('logo_url');
    await expect(page.locator('#enabled-endpoints').textContent()).resolves.toBe('assess, sessions, credentials, wallets, reputation');
    await page.getByLabel('Display name').fill('Acme <Rare> Books');
    await page.getByLabel('Support email').fill('help@acme.example');
    await page.getByLabel('Logo URL (https)').fill('https://acme.example/logo.png');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toBe('Settings saved.');
    await shoot(page, '06-settings');
    const session = (await (
      await fetch(`${base}/v1/sessions`, { method: 'POST', headers: { 'X-API-Key': merchant.apiKey, 'Content-Type': 'application/json' }, body: '{}' })
    ).json()) as { verify_url: string };
    const verify = await newPage();
    await verify.goto(session.verify_url);
    await expect(verify.locator('#merchant-name').textContent()).resolves.toBe('Acme <Rare> Books');
  });

  it('filters the activity by decision and reason, pages by cursor, exports the filtered rows as CSV, and lists operator credentials', async () => {
    await seedAudit(h.deps, merchant.accountId, 400);
    await verifyAccount(h.deps, merchant.accountId);
    const minted = (await (
      await fetch(`${base}/v1/credentials`, {
        method: 'POST',
        headers: { 'X-API-Key': merchant.apiKey, 'Content-Type': 'application/json' },
        body: '{"label":"ci-bot","ttl_days":30}',
      })
    ).json()) as { prefix: string };
    const page = await newPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Activity' }).click();
    await expect(page.locator('#audit tr').count()).resolves.toBe(51);
    const credentials = page.getByRole('table', { name: 'Operator credentials' });
    const row = (await credentials.getByRole('row').nth(1).getByRole('cell').allTextContents()).slice(0, 5);
    expect([row[0], row[2], row[3], row[4]]).toEqual([`${minted.prefix} ci-bot`, 'this account', 'API', 'live']);
    await shoot(page, '07-activity');
    await page.getByLabel('Decision').selectOption('deny');
    await page.getByLabel('Reason').selectOption('kyc_required');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const decisions = await page.locator('#audit tr td:nth-child(2)').allTextContents();
    expect(decisions).toHaveLength(50);
    expect(new Set(decisions)).toEqual(new Set(['deny']));
    expect(new Set(await page.locator('#audit tr td:nth-child(3)').allTextContents())).toEqual(new Set(['kyc_required']));
    await page.getByRole('link', { name: 'Older entries' }).click();
    // 400 rows: every 6th is a kyc_required denial → 66 in all: 50 on the first page, 16 on the second.
    await expect(page.locator('#audit tr').count()).resolves.toBe(17);
    await expect(page.getByRole('link', { name: 'Older entries' }).count()).resolves.toBe(0);
    await page.goBack();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
    const csv = fs
      .readFileSync(await download.path(), 'utf8')
      .trim()
      .split('\r\n');
    expect(csv[0]).toBe('time,decision,reasons,identity_kind,identity_value,request_id,signer_kind,signer_sanctions');
    expect(csv).toHaveLength(67);
    expect(csv.slice(1).every((line) => line.includes('"deny","kyc_required"'))).toBe(true);
    // Identity method and a one-day date range: only that day's operator-token calls, newest first.
    const day = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Decision').selectOption('');
    await page.getByLabel('Reason').selectOption('');
    await page.getByLabel('Identity method').selectOption('operator_token');
    await page.getByLabel('From (UTC date)').fill(day);
    await page.getByLabel('To (UTC date, inclusive)').fill(day);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const times = await page.locator('#audit tr td:nth-child(1)').allTextContents();
    const expected = await h.deps
      .db('assess_audit')
      .where({ account_id: merchant.accountId, identity_kind: 'operator_token' })
      .whereRaw(`(created_at at time zone 'utc')::date = ?::date`, [day])
      .count<Array<{ count: string }>>('* as count');
    expect(times.length).toBe(Number(expected[0].count));
    expect(times.length).toBeGreaterThan(0);
    expect(times.every((t) => t.startsWith(day))).toBe(true);
    expect([...times].sort().reverse()).toEqual(times);
    expect(new Set(await page.locator('#audit tr td:nth-child(4)').allTextContents()).size).toBe(times.length);
    expect((await page.locator('#audit tr td:nth-child(4)').allTextContents()).every((t) => t.startsWith('operator_token: '))).toBe(true);
  });

  it('adds a webhook endpoint and shows a delivery in its log, with send again', async () => {
    await verifyAccount(h.deps, merchant.accountId);
    const page = await newPage();
    await signIn(page);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill('http://example.com/hooks');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect(page.locator('.alert').textContent()).resolves.toBe('The URL must start with https:// (http:// only for localhost).');
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('session.verified').uncheck();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    expect(await page.locator('#created-secret').textContent()).toMatch(/^whsec_/);
    await shoot(page, '08-webhooks');
    const minted = (await (
      await fetch(`${base}/v1/credentials`, {
        method: 'POST',
        headers: { 'X-API-Key': merchant.apiKey, 'Content-Type': 'application/json' },
        body: '{"ttl_days":7}',
      })
    ).json()) as { id: string };
    await api('DELETE', `/v1/credentials/${minted.id}`, merchant.apiKey);
    const before = receiver.received.length;
    await receiver.waitFor(before + 1);
    await page.getByRole('link', { name: 'Details and delivery log' }).click();
    for (
      let i = 0;
      i < 50 &&
      !(
        await page
          .locator('#deliveries')
          .textContent()
          .catch(() => '')
      )?.includes('succeeded');
      i++
    ) {
      await new Promise((r) => setTimeout(r, 100));
      await page.reload();
    }
    const log = await page.locator('#deliveries').textContent();
    expect(log).toContain('credential.revoked');
    expect(log).toContain('succeeded');
    expect(log).toContain('200');
    await shoot(page, '09-webhook-endpoint');
    await page.getByRole('button', { name: 'Send again' }).click();
    await expect(page.getByRole('status').textContent()).resolves.toBe('Delivery queued again.');
    await receiver.waitFor(before + 2);

    // Removing asks first; cancelling keeps the endpoint.
    await page.getByRole('link', { name: 'Remove endpoint…' }).click();
    await shoot(page, '12-webhook-remove-confirm');
    await page.getByRole('link', { name: 'Cancel, keep the endpoint' }).click();
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Webhook endpoint');
    await page.getByRole('link', { name: 'Remove endpoint…' }).click();
    await page.getByRole('button', { name: 'Remove endpoint' }).click();
    expect(new URL(page.url()).pathname).toBe('/dashboard/webhooks');
    await expect(page.getByRole('status').textContent()).resolves.toBe('Endpoint removed.');
    await expect(page.getByText('No endpoints yet.').count()).resolves.toBe(1);
    await page.reload();
    await expect(page.getByRole('status').count()).resolves.toBe(0);
  });
});
