// Headless Chromium for the browser tests (verify page, dashboard, /docs): Debian's chromium driven by
// playwright-core, with the flags that keep it off the network; and a harness served on a real port for it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { createHarness, type Harness } from './harness';
import { CHROMIUM_PATH } from './env';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}

/** A test harness served on a loopback port, with PUBLIC_BASE_URL set to that address so pages link to themselves. */
export async function servedHarness(env: Record<string, string | undefined>): Promise<{ h: Harness; base: string; server: http.Server }> {
  let app: http.RequestListener | null = null;
  const server = http.createServer((req, res) => app!(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const h = await createHarness({ env: { ...env, PUBLIC_BASE_URL: base } });
  app = h.app;
  return { h, base, server };
}
