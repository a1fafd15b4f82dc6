// The example merchant (npm run example:merchant) against a live identity server: the walkthrough in
// README "Example merchant" — bootstrap session without identity, then a verified operator token buys.
import request from 'supertest';
import { resetTables } from '../support/harness';
import { ASSESS_TABLES, createOperator, mintCredential } from '../assess/seed';
import { createShop } from '../../middleware/examples/merchant';
import { startIdentityServer, type IdentityServer } from './support';

describe('example merchant', () => {
  let id: IdentityServer;
  beforeAll(async () => {
    id = await startIdentityServer();
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
  });
  afterAll(() => id.close());

  it('bootstraps verification for an anonymous agent, then sells to a verified operator', async () => {
    const { app, gate } = createShop({ apiKey: id.apiKey, baseUrl: id.baseUrl });
    try {
      expect((await request(app).get('/products')).body.products).toHaveLength(2);
      expect((await request(app).get('/.well-known/ucp')).body.ucp.payment_handlers['com.kya.payment.mpp'][0].config.networks).toEqual([
        { network: 'tempo-testnet', chain_id: 42431 },
      ]);

      const anon = await request(app).post('/buy/grinder');
      expect(anon.status).toBe(403);
      expect(anon.body.error.code).toBe('identity_required');
      const session = await id.h.deps.db('sessions').where({ id: anon.body.session_id }).first();
      expect(session).toMatchObject({ context: 'example-shop', product_name: 'Burr grinder' });

      const op = await createOperator(id.h.deps, { jurisdiction: 'FR' });
      const { token } = await mintCredential(id.h.deps, op);
      const paid = await request(app).post('/buy/grinder').set('X-Operator-Token', token);
      expect(paid.status).toBe(200);
      expect(paid.body).toMatchObject({ product: { sku: 'grinder', name: 'Burr grinder' }, degraded: false });
      expect(paid.body.buyer).toMatch(/^oph_/);
    } finally {
      gate.close();
    }
  });
});
