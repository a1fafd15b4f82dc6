// Example merchant: a small Express shop with one gated paid route, run against a local identity server.
//   KYA_API_KEY=as_live_… [KYA_BASE_URL=http://localhost:3000] [PORT=4000] npm run example:merchant
// The walk-through with curl is in docs/quickstart.md (`npm run demo` starts the identity server it uses).
import express, { type Express } from 'express';
import { createGate, getGateResult, ucpProfile, type Gate } from '@kya/gate';

const PRODUCTS: Record<string, { name: string; price_usd: string }> = {
  'espresso-beans': { name: 'Espresso beans, 1 kg', price_usd: '24.00' },
  grinder: { name: 'Burr grinder', price_usd: '129.00' },
};

export interface ShopOptions {
  apiKey: string;
  baseUrl: string;
  /** Let buyers through (degraded) when the identity server is down. */
  failOpen?: boolean;
}

/** Builds the shop (exported so tests can drive it without a port). */
export function createShop(options: ShopOptions): { app: Express; gate: Gate } {
  const app = express();
  app.use(express.json());

  // Declares the MPP networks the shop accepts, for agents that discover payment handlers.
  app.use(ucpProfile({ networks: [{ network: 'tempo-testnet' }] }));

  app.get('/products', (_req, res) => {
    res.json({ products: Object.entries(PRODUCTS).map(([sku, p]) => ({ sku, ...p })) });
  });

  const gate = createGate({
    apiKey: options.apiKey,
    baseUrl: options.baseUrl,
    policy: { requireKyc: true, minAge: 18, blockedJurisdictions: ['KP', 'IR'] },
    failOpen: options.failOpen ?? false,
    degradedHeader: 'X-Gate-Degraded',
    // An agent with no identity gets a verification session it can hand to its user, then retry.
    createSessionOnMissing: {
      context: 'example-shop',
      getSessionOptions: (req) => ({ productName: PRODUCTS[String(req.params.sku)]?.name ?? 'Example shop order' }),
    },
  });

  app.post('/buy/:sku', gate, (req, res) => {
    const product = PRODUCTS[String(req.params.sku)];
    if (!product) return void res.status(404).json({ error: { code: 'not_found', message: 'No such product.' } });
    const gateResult = getGateResult(req)!;
    res.json({
      order_id: `ord_${Date.now().toString(36)}`,
      product: { sku: req.params.sku, ...product },
      // The pairwise handle is the key for any per-buyer state (token mode); the token itself never reaches here.
      buyer: gateResult.operator_handle ?? gateResult.identity.wallet_address,
      degraded: gateResult.degraded,
    });
  });
  return { app, gate };
}

if (require.main === module) {
  const apiKey = process.env.KYA_API_KEY;
  if (!apiKey) {
    console.error('Set KYA_API_KEY to a merchant API key (`npm run demo` prints one; or: npm run admin -- account create --name "Example shop" --tier paid).');
    process.exit(1);
  }
  const baseUrl = process.env.KYA_BASE_URL ?? 'http://localhost:3000';
  const port = Number(process.env.PORT ?? 4000);
  const { app, gate } = createShop({ apiKey, baseUrl, failOpen: process.env.KYA_FAIL_OPEN === '1' });
  const server = app.listen(port, () => console.log(`example shop on http://localhost:${port} (identity server ${baseUrl})`));
  const stop = () => {
    gate.close();
    server.close(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
