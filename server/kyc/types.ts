// The KYC provider interface behind the verify page: a provider either collects identity data in our own form
// (`sandbox`) or sends the user to a hosted step and reports the result by a signed webhook (`stripe`).

/** An identity as the provider verified it. PII: only ever stored encrypted. */
export interface VerifiedIdentity {
  fullName: string;
  /** YYYY-MM-DD */
  dateOfBirth: string;
  /** ISO 3166-1 alpha-2 */
  country: string;
  documentNumber: string | null;
  operatorType: 'individual';
}

export type KycResult =
  | { outcome: 'verified'; reference: string; identity: VerifiedIdentity; /** the provider's own watchlist check hit */ watchlistHit?: boolean }
  | { outcome: 'failed'; reference: string | null; reason: string };

/** What the sandbox form collects, already valid: a name with a letter, a past birth date, a known country code. */
export interface SandboxIdentity {
  fullName: string;
  /** YYYY-MM-DD */
  dateOfBirth: string;
  /** ISO 3166-1 alpha-2 (or XK) */
  country: string;
  documentNumber: string;
}

/** A provider event as the webhook route needs it, once its signature and shape were checked. */
export interface KycWebhookEvent {
  id: string;
  type: string;
  /** The provider's reference of the verification the event is about (well formed), or null. */
  reference: string | null;
  /** The event says that verification finished: its result can be fetched now. */
  final: boolean;
}

export type KycWebhookDelivery =
  | { kind: 'event'; event: KycWebhookEvent }
  /** Signed, so from the provider, but its id or type cannot be recorded: acknowledged and ignored. */
  | { kind: 'unusable'; idLength: number };

interface KycProviderCommon {
  /**
   * Verifies and reads one webhook delivery over its raw body. Null when this provider is not reached by webhooks
   * here (the sandbox, or no signing secret configured); a bad signature or body throws a 400 naming the field.
   */
  parseWebhook(rawBody: Buffer, header: (name: string) => string | undefined, now: Date): KycWebhookDelivery | null;
  /** The result of a finished verification; null while it is still processing (throws KycProviderError). */
  result(reference: string): Promise<KycResult | null>;
}

export interface FormKycProvider extends KycProviderCommon {
  readonly name: 'sandbox';
  readonly kind: 'form';
  /** The outcome for an identity the form has already validated. */
  evaluate(identity: SandboxIdentity): KycResult;
}

export interface HostedKycProvider extends KycProviderCommon {
  readonly name: 'stripe';
  readonly kind: 'hosted';
  /** Creates the provider's verification for our session; returns its reference and the hosted URL. */
  start(input: { sessionId: string; returnUrl: string }): Promise<{ reference: string; url: string }>;
}

/** A provider API call failed; `status` is the provider's HTTP status, null when it was unreachable. */
export class KycProviderError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'KycProviderError';
  }

  /** Worth asking again later (unreachable, failing or rate limited); otherwise the provider refused for good. */
  get retryable(): boolean {
    return this.status === null || this.status >= 500 || this.status === 429;
  }
}

export type KycProvider = FormKycProvider | HostedKycProvider;

/** Age bracket from a date of birth on a given day (UTC): '21+', '18+' or 'under_18'. */
export function ageBracket(dateOfBirth: string, now: Date): '21+' | '18+' | 'under_18' {
  const [y, m, d] = dateOfBirth.split('-').map(Number);
  let age = now.getUTCFullYear() - y;
  const beforeBirthday = now.getUTCMonth() + 1 < m || (now.getUTCMonth() + 1 === m && now.getUTCDate() < d);
  if (beforeBirthday) age--;
  if (age >= 21) return '21+';
  if (age >= 18) return '18+';
  return 'under_18';
}

/** A real calendar date in YYYY-MM-DD, not in the future, not before 1900. */
export function isValidBirthDate(value: string, now: Date): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return (
    date.getUTCFullYear() === Number(m[1]) &&
    date.getUTCMonth() === Number(m[2]) - 1 &&
    date.getUTCDate() === Number(m[3]) &&
    Number(m[1]) >= 1900 &&
    date.getTime() <= now.getTime()
  );
}
