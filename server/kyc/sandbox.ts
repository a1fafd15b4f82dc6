// The `sandbox` KYC provider: our own form, deterministic outcomes for tests and demos (README, "Verification sessions and the verify page"):
//   document number starting with FAIL → failed (document unreadable)
//   document number starting with FLAG → verified, but the provider's watchlist check hits → flagged
//   anything else → verified (then name screening against the configured list may still flag it)
import crypto from 'node:crypto';
import { isCountryCode } from '../../shared/countries';
import { isValidBirthDate, KycInputError, type FormKycProvider, type KycResult, type KycWebhookDelivery, type SandboxForm } from './types';
import type { FieldProblem } from '../../shared/errors';

export class SandboxKycProvider implements FormKycProvider {
  readonly name = 'sandbox' as const;
  readonly kind = 'form' as const;

  /** The sandbox decides when the form is submitted: no webhooks, and nothing to fetch later. */
  parseWebhook(): KycWebhookDelivery | null {
    return null;
  }

  result(): Promise<KycResult | null> {
    return Promise.resolve(null);
  }

  evaluate(form: SandboxForm, now: Date): KycResult {
    const problems: FieldProblem[] = [];
    const fullName = form.full_name.replace(/\s+/g, ' ').trim();
    if (fullName.length < 2 || fullName.length > 200 || !/\p{L}/u.test(fullName)) {
      problems.push({ field: 'full_name', message: 'Enter your full legal name (2 to 200 characters).' });
    }
    if (!isValidBirthDate(form.date_of_birth, now)) {
      problems.push({ field: 'date_of_birth', message: 'Enter a real date of birth (day, month and year), not in the future.' });
    }
    const country = form.country.toUpperCase();
    if (!isCountryCode(country)) problems.push({ field: 'country', message: 'Choose your country of residence.' });
    const documentNumber = form.document_number.trim();
    if (!/^[A-Za-z0-9][A-Za-z0-9 -]{2,63}$/.test(documentNumber)) {
      problems.push({ field: 'document_number', message: 'Enter the document number (3 to 64 letters, digits, spaces or dashes).' });
    }
    if (problems.length) throw new KycInputError(problems);

    const reference = `sbx_${crypto.randomUUID()}`;
    const upper = documentNumber.toUpperCase();
    if (upper.startsWith('FAIL')) return { outcome: 'failed', reference, reason: 'The identity document could not be read.' };
    return {
      outcome: 'verified',
      reference,
      identity: { fullName, dateOfBirth: form.date_of_birth, country, documentNumber, operatorType: 'individual' },
      watchlistHit: upper.startsWith('FLAG'),
    };
  }
}
