// verifyWebhook (the gate package's receiver-side check) against signatures made the way the server makes them.
import { verifyWebhook, WebhookVerificationError } from '../../middleware';
import { signatureHeader } from '../../shared/webhookSignature';

const SECRET = 'whsec_test_secret_0123456789';
const BODY = JSON.stringify({ id: 'evt_abc', type: 'session.verified', created: 1780000000, data: { session_id: 'vs_1' } });
const NOW = 1780000100;

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err.reason;
    throw err;
  }
  throw new Error('expected a WebhookVerificationError');
}

describe('verifyWebhook', () => {
  it('accepts a valid signature and returns the event with its id and type', () => {
    const header = signatureHeader(SECRET, NOW - 10, BODY);
    expect(verifyWebhook(BODY, header, SECRET, { toleranceSeconds: 300, now: NOW })).toEqual({
      id: 'evt_abc',
      type: 'session.verified',
      created: 1780000000,
      data: { session_id: 'vs_1' },
    });
    expect(verifyWebhook(Buffer.from(BODY), header, SECRET, { now: NOW }).id).toBe('evt_abc');
  });

  it('refuses a tampered body', () => {
    const header = signatureHeader(SECRET, NOW, BODY);
    expect(failure(() => verifyWebhook(BODY.replace('vs_1', 'vs_2'), header, SECRET, { now: NOW }))).toBe('signature_mismatch');
  });

  it('refuses a timestamp older than the tolerance, even with a correct signature', () => {
    const header = signatureHeader(SECRET, NOW - 301, BODY);
    expect(failure(() => verifyWebhook(BODY, header, SECRET, { toleranceSeconds: 300, now: NOW }))).toBe('timestamp_out_of_tolerance');
    expect(verifyWebhook(BODY, header, SECRET, { toleranceSeconds: 600, now: NOW }).id).toBe('evt_abc');
  });

  it('refuses a signature made with another secret', () => {
    const header = signatureHeader('whsec_other', NOW, BODY);
    expect(failure(() => verifyWebhook(BODY, header, SECRET, { now: NOW }))).toBe('signature_mismatch');
  });

  it('refuses a re-signed timestamp (the timestamp is part of the signed material)', () => {
    const header = signatureHeader(SECRET, NOW - 1000, BODY).replace(`t=${NOW - 1000}`, `t=${NOW}`);
    expect(failure(() => verifyWebhook(BODY, header, SECRET, { now: NOW }))).toBe('signature_mismatch');
  });

  it('accepts any one of several v1 signatures and refuses missing or malformed headers', () => {
    const good = signatureHeader(SECRET, NOW, BODY);
    const other = signatureHeader('whsec_other', NOW, BODY).split(',')[1];
    expect(verifyWebhook(BODY, `${good},${other}`, SECRET, { now: NOW }).id).toBe('evt_abc');
    expect(failure(() => verifyWebhook(BODY, undefined, SECRET, { now: NOW }))).toBe('missing_header');
    expect(failure(() => verifyWebhook(BODY, 't=abc,v1=zz', SECRET, { now: NOW }))).toBe('malformed_header');
    expect(failure(() => verifyWebhook(BODY, `t=${NOW}`, SECRET, { now: NOW }))).toBe('malformed_header');
  });
});
