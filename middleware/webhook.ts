// Verifying kya webhook deliveries on the merchant's side: the HMAC over "t.body", a timestamp tolerance
// against replays, and a constant-time comparison. Takes the raw body exactly as received.
import crypto from 'node:crypto';
import { webhookSignature, type WebhookEvent } from '../shared/webhookSignature';

export { WEBHOOK_SIGNATURE_HEADER, WEBHOOK_EVENT_TYPES, type WebhookEvent, type WebhookEventType } from '../shared/webhookSignature';

export type WebhookVerificationFailure = 'missing_header' | 'malformed_header' | 'timestamp_out_of_tolerance' | 'signature_mismatch' | 'invalid_body';

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyWebhookOptions {
  /** Largest accepted distance between the signed timestamp and now (default 300 s). */
  toleranceSeconds?: number;
  /** Current time in unix seconds (tests). */
  now?: number;
}

/**
 * Checks a delivery's `Kya-Signature` header against the endpoint's signing secret and returns the parsed
 * event; throws WebhookVerificationError otherwise. Dedupe on `event.id`: delivery is at least once.
 */
export function verifyWebhook(
  rawBody: string | Buffer,
  header: string | string[] | undefined | null,
  secret: string,
  options: VerifyWebhookOptions = {},
): WebhookEvent {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) throw new WebhookVerificationError('missing_header', 'no Kya-Signature header');
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const key = part.slice(0, eq).trim();
    const v = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(v)) timestamp = Number(v);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(v)) signatures.push(v.toLowerCase());
  }
  if (timestamp === null || signatures.length === 0) throw new WebhookVerificationError('malformed_header', 'Kya-Signature needs t= and v1=');
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > tolerance) throw new WebhookVerificationError('timestamp_out_of_tolerance', 'the signed timestamp is outside the tolerance');
  const expected = Buffer.from(webhookSignature(secret, timestamp, rawBody), 'hex');
  // Every candidate is compared (no early exit), each in constant time.
  let match = false;
  for (const s of signatures) match = crypto.timingSafeEqual(expected, Buffer.from(s, 'hex')) || match;
  if (!match) throw new WebhookVerificationError('signature_mismatch', 'no signature matches the secret');
  try {
    return JSON.parse(Buffer.isBuffer(rawBody) ? rawBody.toString('utf8') : rawBody) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not JSON');
  }
}
