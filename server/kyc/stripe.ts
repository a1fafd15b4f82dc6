// Stripe Identity adapter: creates a VerificationSession for our session (hosted document + selfie check),
// verifies `Stripe-Signature` webhooks over the raw body, and turns a finished VerificationSession into a
// KycResult (verified outputs are fetched from the API; webhook payloads omit them).
import crypto from 'node:crypto';
import { ApiError } from '../../shared/errors';
import { hmacSha256 } from '../crypto';
import { KycProviderError, type HostedKycProvider, type KycResult, type KycWebhookDelivery } from './types';

export const STRIPE_SIGNATURE_TOLERANCE_SECONDS = 300;

export interface StripeEvent {
  id: string;
  type: string;
  data: { object: { id?: string; object?: string; status?: string; last_error?: { code?: string | null; reason?: string | null } | null } };
}

/**
 * `t=<unix>,v1=<hex>[,v1=…]`: expected = hex(HMAC-SHA256(secret, `${t}.${rawBody}`)); valid when any v1 matches
 * (constant-time) and the timestamp is within the tolerance of now.
 */
export function verifyStripeSignature(
  rawBody: Buffer,
  header: string | undefined,
  secret: string,
  now: Date,
  toleranceSeconds = STRIPE_SIGNATURE_TOLERANCE_SECONDS,
): boolean {
  if (!header || header.length > 2048) return false;
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value.toLowerCase());
  }
  if (timestamp === null || signatures.length === 0) return false;
  if (Math.abs(Math.floor(now.getTime() / 1000) - timestamp) > toleranceSeconds) return false;
  const expected = hmacSha256(secret, `${timestamp}.${rawBody.toString('utf8')}`);
  let ok = false;
  // Compare against every candidate (no early exit) so timing does not reveal which one matched.
  for (const sig of signatures) ok = crypto.timingSafeEqual(expected, Buffer.from(sig, 'hex')) || ok;
  return ok;
}

/** Builds a valid header for a payload (tests and local tooling). */
export function signStripePayload(rawBody: string, secret: string, timestamp: number): string {
  return `t=${timestamp},v1=${hmacSha256(secret, `${timestamp}.${rawBody}`).toString('hex')}`;
}

export class StripeApiError extends KycProviderError {
  constructor(message: string, status: number | null) {
    super(message, status);
    this.name = 'StripeApiError';
  }
}

/** Events after which a VerificationSession's result is final. */
const FINAL_TYPES = new Set([
  'identity.verification_session.verified',
  'identity.verification_session.requires_input',
  'identity.verification_session.canceled',
]);

/** Event ids and types Stripe sends are short printable ASCII; anything else cannot be one of ours. */
const EVENT_FIELD = /^[\x21-\x7e]{1,255}$/;
/** A VerificationSession id as Stripe issues them. */
const SESSION_REFERENCE = /^vs_[0-9A-Za-z_]{1,250}$/;

export class StripeIdentityProvider implements HostedKycProvider {
  readonly name = 'stripe' as const;
  readonly kind = 'hosted' as const;

  constructor(
    private readonly options: {
      apiBase: string;
      secretKey: string;
      /** STRIPE_WEBHOOK_SECRET; without it no webhook is accepted. */
      webhookSecret: string | null;
      timeoutMs: number;
      fetch?: typeof fetch;
    },
  ) {}

  /** `Stripe-Signature` verified over the raw body, then the event read; only VerificationSession ids are references. */
  parseWebhook(rawBody: Buffer, header: (name: string) => string | undefined, now: Date): KycWebhookDelivery | null {
    const secret = this.options.webhookSecret;
    if (!secret) return null;
    if (!verifyStripeSignature(rawBody, header('stripe-signature'), secret, now)) {
      throw new ApiError('bad_request', 'Invalid Stripe-Signature.', {
        details: [{ field: 'Stripe-Signature', message: 'missing, malformed, outside the 300 s tolerance, or not matching the payload' }],
      });
    }
    let event: StripeEvent;
    try {
      event = JSON.parse(rawBody.toString('utf8')) as StripeEvent;
    } catch {
      throw new ApiError('bad_request', 'Malformed JSON in request body.', { details: [{ field: 'body', message: 'is not valid JSON' }] });
    }
    if (typeof event?.id !== 'string' || typeof event.type !== 'string') {
      throw new ApiError('bad_request', 'Not a Stripe event.', { details: [{ field: 'body', message: 'id and type are required' }] });
    }
    if (!EVENT_FIELD.test(event.id) || !EVENT_FIELD.test(event.type)) return { kind: 'unusable', idLength: event.id.length };
    const object = event.data && typeof event.data.object === 'object' && event.data.object !== null ? event.data.object : {};
    const candidate = object.object === 'identity.verification_session' && typeof object.id === 'string' ? object.id : null;
    const reference = candidate && SESSION_REFERENCE.test(candidate) ? candidate : null;
    return { kind: 'event', event: { id: event.id, type: event.type, reference, final: FINAL_TYPES.has(event.type) } };
  }

  private async call(method: 'GET' | 'POST', path: string, form?: URLSearchParams): Promise<Record<string, unknown>> {
    const fetchImpl = this.options.fetch ?? fetch;
    let res: Response;
    try {
      res = await fetchImpl(`${this.options.apiBase.replace(/\/+$/, '')}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${this.options.secretKey}`,
          ...(form ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: form?.toString(),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      throw new StripeApiError(`Stripe API unreachable: ${(err as Error).message}`, null);
    }
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok) {
      const message = (body.error as { message?: string } | undefined)?.message ?? `HTTP ${res.status}`;
      throw new StripeApiError(`Stripe API error: ${message}`, res.status);
    }
    return body;
  }

  async start(input: { sessionId: string; returnUrl: string }): Promise<{ reference: string; url: string }> {
    const form = new URLSearchParams({
      type: 'document',
      'metadata[kya_session_id]': input.sessionId,
      'options[document][require_matching_selfie]': 'true',
      return_url: input.returnUrl,
    });
    const created = await this.call('POST', '/v1/identity/verification_sessions', form);
    if (typeof created.id !== 'string' || typeof created.url !== 'string') throw new StripeApiError('Stripe returned no session id or url', null);
    return { reference: created.id, url: created.url };
  }

  /** The result of a finished VerificationSession, with verified outputs and the document number. */
  async result(reference: string): Promise<KycResult | null> {
    const vs = await this.call(
      'GET',
      `/v1/identity/verification_sessions/${encodeURIComponent(reference)}?expand[]=verified_outputs&expand[]=last_verification_report`,
    );
    const status = vs.status as string | undefined;
    if (status === 'canceled') return { outcome: 'failed', reference, reason: 'The verification was cancelled.' };
    if (status === 'requires_input') {
      const lastError = vs.last_error as { code?: string; reason?: string } | null;
      return lastError ? { outcome: 'failed', reference, reason: lastError.reason ?? lastError.code ?? 'The identity check did not succeed.' } : null;
    }
    if (status !== 'verified') return null; // still processing
    const out = (vs.verified_outputs ?? {}) as {
      first_name?: string | null;
      last_name?: string | null;
      dob?: { day?: number | null; month?: number | null; year?: number | null } | null;
      address?: { country?: string | null } | null;
      id_number?: string | null;
    };
    const report = (vs.last_verification_report ?? {}) as { document?: { number?: string | null; issuing_country?: string | null } | null };
    const dob = out.dob;
    const country = (out.address?.country ?? report.document?.issuing_country ?? '').toUpperCase();
    const fullName = [out.first_name, out.last_name].filter(Boolean).join(' ').trim();
    if (!fullName || !dob?.year || !dob.month || !dob.day || !/^[A-Z]{2}$/.test(country)) {
      return { outcome: 'failed', reference, reason: 'The verified identity is missing name, date of birth or country.' };
    }
    const pad = (n: number) => String(n).padStart(2, '0');
    return {
      outcome: 'verified',
      reference,
      identity: {
        fullName,
        dateOfBirth: `${dob.year}-${pad(dob.month)}-${pad(dob.day)}`,
        country,
        documentNumber: report.document?.number ?? out.id_number ?? null,
        operatorType: 'individual',
      },
    };
  }
}
