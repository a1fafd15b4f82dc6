// /docs in headless Chromium with every non-local request blocked: the reference renders from /openapi.json
// using only what the server itself serves (no CDN), under the server's default Content-Security-Policy.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser } from 'playwright-core';
import { launchChromium } from '../support/browser';
import request from 'supertest';
import { createHarness, type Harness } from '../support/harness';

jest.setTimeout(90_000);

describe('GET /docs', () => {
  let h: Harness;
  let server: http.Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    h = await createHarness();
    server = http.createServer(h.app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    server?.close();
    await h?.close();
  });

  it('serves the page and its assets with a CSP that allows no inline or third-party script', async () => {
    const page = await request(h.app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/<script>(?!<)/);
    expect(page.text).not.toMatch(/https?:\/\//);
    expect((await request(h.app).get('/docs/assets/swagger-ui-bundle.js')).status).toBe(200);
    expect((await request(h.app).get('/docs/assets/package.json')).status).toBe(404);
  });

  it('renders every operation offline', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const blocked: string[] = [];
    const problems: string[] = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(base)) return route.continue();
      blocked.push(url);
      return route.abort();
    });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${base}/docs`);
    await page.waitForSelector('.opblock-summary', { timeout: 30_000 });
    const operations = await page.$$eval('.opblock-summary', (els) =>
      els.map(
        (el) => `${el.querySelector('.opblock-summary-method')?.textContent?.trim()} ${el.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
      ),
    );
    expect(operations.sort()).toEqual(
      [
        'POST /v1/assess',
        'GET /v1/assess/verify/{ticket}',
        'POST /v1/sessions',
        'POST /v1/sessions/public',
        'POST /v1/sessions/refresh',
        'GET /v1/sessions/{id}',
        'POST /v1/credentials',
        'GET /v1/credentials',
        'DELETE /v1/credentials/{id}',
        'POST /v1/credentials/wallets',
        'GET /v1/reputation/{address}',
        'POST /v1/telemetry/signer-match',
        'GET /healthz',
        'GET /readyz',
      ].sort(),
    );
    expect(await page.title()).toBe('kya API reference');
    expect(blocked).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
