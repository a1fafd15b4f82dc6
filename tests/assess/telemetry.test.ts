import request from 'supertest';
import { createHarness, type Harness } from '../support/harness';

describe('POST /v1/telemetry/signer-match', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  const count = async (kind: string, network: string) => {
    const metric = await h.deps.metrics.getSingleMetric('kya_signer_match_reports_total')!.get();
    return metric.values.find((v) => v.labels.kind === kind && v.labels.network === network)?.value ?? 0;
  };

  it('answers 202 and counts the reported verdict', async () => {
    const before = await count('wallet_signer_mismatch', 'evm');
    const res = await request(h.app)
      .post('/v1/telemetry/signer-match')
      .send({ kind: 'wallet_signer_mismatch', claimed_wallet: '0x' + '1'.repeat(40), signer: '0x' + '2'.repeat(40), network: 'evm' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ recorded: true });
    expect(await count('wallet_signer_mismatch', 'evm')).toBe(before + 1);
  });

  it('never fails the caller: malformed JSON, odd kinds and oversized bodies are counted as other', async () => {
    const before = await count('other', 'unknown');
    await request(h.app).post('/v1/telemetry/signer-match').set('Content-Type', 'application/json').send('{nope').expect(202);
    await request(h.app)
      .post('/v1/telemetry/signer-match')
      .send({ kind: 'x'.repeat(50) })
      .expect(202);
    await request(h.app)
      .post('/v1/telemetry/signer-match')
      .send({ kind: 'pass', pad: 'x'.repeat(64 * 1024) })
      .expect(202);
    await request(h.app)
      .post('/v1/telemetry/signer-match')
      .send([{ kind: 'pass' }])
      .expect(202);
    expect(await count('other', 'unknown')).toBe(before + 4);
  });

  it('keeps a known verdict whose network it does not know, under network "unknown"', async () => {
    const before = await count('pass', 'unknown');
    await request(h.app).post('/v1/telemetry/signer-match').send({ kind: 'pass', network: 'bitcoin' }).expect(202);
    await request(h.app).post('/v1/telemetry/signer-match').send({ kind: 'pass' }).expect(202);
    expect(await count('pass', 'unknown')).toBe(before + 2);
  });
});
