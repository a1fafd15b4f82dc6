import crypto from 'node:crypto';
import bs58 from 'bs58';
import fc from 'fast-check';
import { operatorHandle } from '../../server/crypto';
import { TEST_SERVER_SECRET } from '../support/env';

// oph_ + base58(HMAC-SHA256(server secret, operator id ‖ merchant id)) truncated to 22.
const HANDLE = /^oph_[1-9A-HJ-NP-Za-km-z]{22}$/;

describe('operator_handle', () => {
  it('is identical across calls for the same (operator, merchant) pair and differs across merchants', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), fc.uuid(), (operator, merchantA, merchantB) => {
        fc.pre(merchantA !== merchantB);
        const a1 = operatorHandle(TEST_SERVER_SECRET, operator, merchantA);
        const a2 = operatorHandle(TEST_SERVER_SECRET, operator, merchantA);
        const b = operatorHandle(TEST_SERVER_SECRET, operator, merchantB);
        expect(a1).toMatch(HANDLE);
        expect(a2).toBe(a1);
        expect(b).toMatch(HANDLE);
        expect(b).not.toBe(a1);
      }),
      { numRuns: 2000 },
    );
  });

  it('differs across operators for one merchant, and across server secrets', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), fc.uuid(), (operatorA, operatorB, merchant) => {
        fc.pre(operatorA !== operatorB);
        expect(operatorHandle(TEST_SERVER_SECRET, operatorA, merchant)).not.toBe(operatorHandle(TEST_SERVER_SECRET, operatorB, merchant));
        expect(operatorHandle(TEST_SERVER_SECRET, operatorA, merchant)).not.toBe(operatorHandle(TEST_SERVER_SECRET + 'x', operatorA, merchant));
      }),
      { numRuns: 1000 },
    );
  });

  it('is unique over many random pairs and matches the documented derivation', () => {
    const seen = new Map<string, string>();
    for (let i = 0; i < 20_000; i++) {
      const operator = crypto.randomUUID();
      const merchant = crypto.randomUUID();
      const handle = operatorHandle(TEST_SERVER_SECRET, operator, merchant);
      expect(seen.has(handle)).toBe(false);
      seen.set(handle, `${operator}/${merchant}`);
    }
    // Does not reveal either id, and swapping the roles gives another handle (the separator keeps them apart).
    const op = crypto.randomUUID();
    const m = crypto.randomUUID();
    const h = operatorHandle(TEST_SERVER_SECRET, op, m);
    expect(h).not.toContain(op.slice(0, 8));
    expect(operatorHandle(TEST_SERVER_SECRET, m, op)).not.toBe(h);
    const mac = crypto.createHmac('sha256', TEST_SERVER_SECRET).update(`${op}\u0000${m}`).digest();
    expect(h).toBe('oph_' + bs58.encode(mac).slice(0, 22));
  });
});
