// A real identity server (harness deps + createApp) listening on an ephemeral port, with a per-path request
// log so tests can count assess calls, and a merchant shop factory that mounts the gate in front of a route.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express, { type Request, type Response } from 'express';
import { createHarness, createMerchant, type Harness } from '../support/harness';
import { createGate, conditionalGate, getGateResult, type Gate, type GateOptions } from '../../middleware';

export interface IdentityServer {
  h: Harness;
  baseUrl: string;
  apiKey: string;
  merchantId: string;
  /** Every request the server received: path and parsed JSON body. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- received JSON; tests assert its shape
  calls: Array<{ path: string; body: any }>;
  count(path: string): number;
  close(): Promise<void>;
}

const tempFiles = new Set<string>();

/** A plain-list wallet sanctions file naming `addresses` (the real loader reads it). */
/**
 * A wallet sanctions list file for a test server. The server refuses an empty list (a broken download, not a
 * real delisting), so a list meant to sanction nobody in the test still lists one unrelated address.
 */
export function sanctionsFile(addresses: string[]): string {
  if (addresses.length === 0) addresses = ['0x000000000000000000000000000000000000dead'];
  const file = path.join(os.tmpdir(), `kya-gate-sanctions-${process.pid}-${Date.now()}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify({ published_at: '2025-01-01', entries: addresses.map((address) => ({ address, label: 'ETH', sdn_uid: '4242', listed_at: '2025-01-01' })) }),
  );
  tempFiles.add(file);
  return file;
}

/** `merchant: false` skips creating the merchant account (a server whose database is down cannot). */
export async function startIdentityServer(
  options: { env?: Record<string, string>; tier?: 'free' | 'paid' | 'enterprise'; quota?: number; merchant?: false } = {},
): Promise<IdentityServer> {
  const h = await createHarness({ env: options.env });
  const { apiKey, accountId } =
    options.merchant === false
      ? { apiKey: 'as_live_' + 'N'.repeat(43), accountId: '' }
      : await createMerchant(h.deps, { tier: options.tier ?? 'enterprise', quota: options.quota });
  const calls: IdentityServer['calls'] = [];
  // The gate always sends JSON; parsing it here first lets the test see each body (the app's own parser
  // skips an already-parsed body).
  const outer = express();
  outer.use(express.json());
  outer.use((req, _res, next) => {
    calls.push({ path: req.path, body: req.body as unknown });
    next();
  });
  outer.use(h.app);
  const server = http.createServer(outer);
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    h,
    baseUrl: `http://127.0.0.1:${port}`,
    apiKey,
    merchantId: accountId,
    calls,
    count: (p) => calls.filter((c) => c.path === p).length,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await h.close();
      // The sanctions list is loaded at start; the temporary file is no longer needed.
      const file = options.env?.SANCTIONS_WALLET_SOURCE;
      if (file && tempFiles.delete(file)) fs.rmSync(file, { force: true });
    },
  };
}

export interface Shop {
  app: express.Express;
  gate: Gate;
  /** getGateResult(req) as seen by the protected handler of each request, in order. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- whatever the handler saw; tests assert its shape
  seen: any[];
}

/**
 * A merchant app: `POST /paid` behind the gate answers 200 with getGateResult; `/fail` answers 500 behind the
 * gate; `/discover` is behind conditionalGate and answers 402 without a payment header.
 */
export function shop(options: GateOptions<Request, Response>): Shop {
  const gate = createGate(options);
  const app = express();
  const seen: Shop['seen'] = [];
  app.use(express.json());
  app.post('/paid', gate, (req, res) => {
    const result = getGateResult(req);
    seen.push(result);
    res.json({ ok: true, result });
  });
  app.post('/fail', gate, (_req, res) => {
    res.status(500).json({ error: 'handler failed' });
  });
  app.post('/discover', conditionalGate(gate), (req, res) => {
    if (!getGateResult(req)) return void res.status(402).json({ x402Version: 2, error: 'payment required', accepts: [] });
    res.json({ ok: true });
  });
  app.use((err: Error, _req: Request, res: Response, _next: unknown) => {
    res.status(500).json({ merchant_error: err.message });
  });
  return { app, gate, seen };
}

export { eventually } from '../support/eventually';
