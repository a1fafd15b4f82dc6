// The webhook signature both sides compute: `Kya-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "t.body")>`.
import crypto from 'node:crypto';

export const WEBHOOK_SIGNATURE_HEADER = 'Kya-Signature';

export const WEBHOOK_EVENT_TYPES = [
  'session.verified',
  'session.failed',
  'session.flagged',
  'session.expired',
  'credential.revoked',
  'operator.sanctions_flagged',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The JSON body of every delivery. */
export interface WebhookEvent<T = Record<string, unknown>> {
  id: string;
  type: WebhookEventType;
  created: number;
  data: T;
}

export function webhookSignature(secret: string, timestamp: number, body: string | Buffer): string {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

export function signatureHeader(secret: string, timestamp: number, body: string | Buffer): string {
  return `t=${timestamp},v1=${webhookSignature(secret, timestamp, body)}`;
}
