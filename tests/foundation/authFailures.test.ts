// Failed API-key authentication is limited per client address, counted across instances sharing Redis: after
// 30 failures in a minute the next attempt gets 429 with Retry-After before any key lookup, valid key or not.
// An instance learns of the block from the count its own next failure returns (at most one extra attempt).
import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';

describe('failed API-key authentication', () => {
  let a: Harness;
  let b: Harness;
  let apiKey: string;
  beforeEach(async () => {
    // Fresh counters per test: a new shared prefix for both instances.
    const prefix = `kya:test:authfail:${Date.now()}:${Math.random().toString(36).slice(2)}:`;
    [a, b] = await Promise.all([createHarness({ redisPrefix: prefix }), createHarness({ redisPrefix: prefix })]);
    await resetTables(a.deps, ['accounts']);
    ({ apiKey } = await createMerchant(a.deps, { tier: 'enterprise' }));
  });
  afterEach(async () => {
    await a.close();
    await b.close();
  });

  const credentials = (h: Harness, key?: string) => {
    const req = request(h.app).get('/v1/credentials');
    return key === undefined ? req : req.set('X-API-Key', key);
  };

  it('answers the 31st failure in a minute (counted across instances) with 429 and Retry-After, without looking the key up', async () => {
    for (let i = 0; i < 30; i++) {
      const res = await credentials(i % 2 ? b : a, `kya_live_wrong${i}`);
      expect(res.status).toBe(401);
    }
    // The 30th failure was counted on b: b blocks from now on.
    const lookups = jest.spyOn(b.deps.services.accounts, 'authenticate');
    const limited = await credentials(b, 'kya_live_wrong_again');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.body).toEqual({
      error: { code: 'rate_limited', message: expect.stringMatching(/^Too many failed API-key attempts from this address; retry in \d+ s\.$/) },
    });
    // Checked before the lookup, so a valid key from that address waits too; the key is never looked up.
    expect((await credentials(b, apiKey)).status).toBe(429);
    expect(
      (
        await request(b.app)
          .post('/v1/assess')
          .set('Authorization', `Bearer ${apiKey}`)
          .send({ address: '0x' + '1'.repeat(40) })
      ).status,
    ).toBe(429);
    expect(lookups).not.toHaveBeenCalled();
    // Requests presenting no key are not affected (they never look a key up).
    expect((await credentials(b)).status).toBe(401);
    // Instance a has not failed this client since the count passed 30: its next failure (the 31st) tells it.
    expect((await credentials(a, 'kya_live_wrong_on_a')).status).toBe(401);
    expect((await credentials(a, apiKey)).status).toBe(429);
  });

  it('does not count successful authentications', async () => {
    for (let i = 0; i < 29; i++) expect((await credentials(a, `kya_live_wrong${i}`)).status).toBe(401);
    for (let i = 0; i < 40; i++) expect((await credentials(i % 2 ? a : b, apiKey)).status).toBe(200);
    expect((await credentials(b, 'kya_live_wrong_last')).status).toBe(401);
    expect((await credentials(b, apiKey)).status).toBe(429);
  });
});
