// The MPP payment-handler config: builder, joi validator, and the
// `/.well-known/ucp` profile route.
import express from 'express';
import request from 'supertest';
import { buildMerchantProfile, buildMppHandlerConfig, mppHandlerId, validateMerchantProfile, validateMppHandlerConfig } from '../../shared/paymentHandler';
import { ucpProfile } from '../../middleware';

const TEMPO_RECIPIENT = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C';
const SOL_RECIPIENT = '7xiCBraX4QcQPFKgSdZzuNHBM3aaxvTvx4Byt2DtcNaz';

describe('MPP handler config', () => {
  it('fills in the Tempo chain ids and keeps extra properties at every level', () => {
    const config = buildMppHandlerConfig(
      [
        { network: 'tempo-mainnet', recipient: TEMPO_RECIPIENT, extra: { currency: 'USDC' } },
        { network: 'tempo-testnet' },
        { network: 'mpp-solana-devnet', recipient: SOL_RECIPIENT },
      ],
      { settlement: 'instant' },
    );
    expect(config).toEqual({
      settlement: 'instant',
      networks: [
        { currency: 'USDC', network: 'tempo-mainnet', chain_id: 4217, recipient: TEMPO_RECIPIENT },
        { network: 'tempo-testnet', chain_id: 42431 },
        { network: 'mpp-solana-devnet', recipient: SOL_RECIPIENT },
      ],
    });
  });

  it.each([
    [{}, 'networks is required'],
    [{ networks: [] }, 'networks must contain at least 1 items'],
    [{ networks: [{ network: 'ethereum' }] }, 'networks.0.network must be one of [tempo-mainnet, tempo-testnet, mpp-solana-mainnet, mpp-solana-devnet]'],
    [{ networks: [{ network: 'tempo-mainnet', chain_id: 42431 }] }, 'networks.0.chain_id must be [4217]'],
    [{ networks: [{ network: 'tempo-testnet', chain_id: '42431' }] }, 'networks.0.chain_id must be a number'],
    [{ networks: [{ network: 'mpp-solana-mainnet', chain_id: 1 }] }, 'networks.0.chain_id is not allowed'],
    [{ networks: [{ network: 'tempo-mainnet', recipient: SOL_RECIPIENT }] }, 'networks.0.recipient must be a 0x-prefixed 40-hex address on a Tempo network'],
    [
      { networks: [{ network: 'mpp-solana-mainnet', recipient: TEMPO_RECIPIENT }] },
      'networks.0.recipient must be a base58 address of 32 to 44 characters on a Solana network',
    ],
  ])('rejects %j naming the field', (config, message) => {
    const out = validateMppHandlerConfig(config);
    expect(out.ok).toBe(false);
    expect(out.ok ? [] : out.problems.map((p) => `${p.field} ${p.message}`)).toContain(message);
  });

  it('accepts a minimal config and unknown properties', () => {
    expect(validateMppHandlerConfig({ networks: [{ network: 'tempo-testnet', memo: true }], x: 1 })).toEqual({
      ok: true,
      value: { networks: [{ network: 'tempo-testnet', memo: true }], x: 1 },
    });
  });

  it('builds com.<vendor>.payment.mpp ids and refuses ones that are not reverse-DNS', () => {
    expect(mppHandlerId('acme')).toBe('com.acme.payment.mpp');
    expect(() => mppHandlerId('Acme Inc')).toThrow('vendor "Acme Inc" does not form a reverse-DNS handler id');
    const bad = validateMerchantProfile({
      ucp: {
        version: '2026-01-11',
        payment_handlers: { 'Com.Acme': [{ id: 'x', version: '2026-01-11', config: { networks: [{ network: 'tempo-testnet' }] } }] },
      },
    });
    expect(bad.ok).toBe(false);
  });
});

describe('/.well-known/ucp', () => {
  const profile = buildMerchantProfile({ networks: [{ network: 'tempo-mainnet', recipient: TEMPO_RECIPIENT }], spec: 'https://kya.dev/ucp/mpp' });
  const app = express();
  app.use(ucpProfile({ profile }));
  app.get('/other', (_req, res) => void res.send('other'));

  it('serves the validated profile with the MPP binding', async () => {
    const res = await request(app).get('/.well-known/ucp');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      ucp: {
        version: '2026-01-11',
        payment_handlers: {
          'com.kya.payment.mpp': [
            {
              id: 'com.kya.payment.mpp',
              version: '2026-01-11',
              spec: 'https://kya.dev/ucp/mpp',
              config: { networks: [{ network: 'tempo-mainnet', chain_id: 4217, recipient: TEMPO_RECIPIENT }] },
            },
          ],
        },
      },
    });
    const again = await request(app).get('/.well-known/ucp').set('If-None-Match', res.headers.etag);
    expect(again.status).toBe(304);
  });

  it('passes other paths and methods through', async () => {
    expect((await request(app).get('/other')).text).toBe('other');
    expect((await request(app).post('/.well-known/ucp')).status).toBe(404);
  });

  it('throws at mount time for an invalid profile', () => {
    expect(() => ucpProfile({ networks: [{ network: 'tempo-mainnet', chainId: 1 }] })).toThrow(
      'Invalid MPP payment handler config: networks.0.chain_id must be [4217]',
    );
  });
});
