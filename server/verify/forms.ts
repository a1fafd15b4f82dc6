// The verify page's two forms as joi schemas: the sandbox identity form and the wallet claim. Each returns
// typed, already-valid input for the service, or one message per field for the page to show beside it.
import Joi from 'joi';
import { COUNTRY_CODES } from '../../shared/countries';
import { parseAddressFor, type ParsedAddress } from '../../shared/address';
import { fail } from '../http/validate';
import { formValidator, type FormOutcome } from '../http/forms';
import { isValidBirthDate, type SandboxIdentity } from '../kyc/types';

export const IDENTITY_FIELDS = ['full_name', 'date_of_birth', 'country', 'document_number'] as const;
/** The identity form as submitted. */
export type IdentityFormFields = Record<(typeof IDENTITY_FIELDS)[number], string>;

const identitySchema = Joi.object({
  full_name: Joi.string().trim().replace(/\s+/g, ' ').min(2).max(200).pattern(/\p{L}/u).required(),
  date_of_birth: Joi.string()
    .trim()
    .required()
    .custom((value: string, helpers) => (isValidBirthDate(value, (helpers.prefs.context as { now: Date }).now) ? value : helpers.error('any.invalid'))),
  country: Joi.string()
    .trim()
    .uppercase()
    .valid(...COUNTRY_CODES)
    .required(),
  document_number: Joi.string()
    .trim()
    .pattern(/^[A-Za-z0-9][A-Za-z0-9 -]{2,63}$/)
    .required(),
});

const checkIdentity = formValidator<IdentityFormFields>(identitySchema, {
  full_name: 'Enter your full legal name (2 to 200 characters).',
  date_of_birth: 'Enter a real date of birth (day, month and year), not in the future.',
  country: 'Choose your country of residence.',
  document_number: 'Enter the document number (3 to 64 letters, digits, spaces or dashes).',
});

/** The sandbox identity form; `now` decides which birth dates are in the future. */
export function parseIdentityForm(body: unknown, now: Date): FormOutcome<SandboxIdentity> {
  const checked = checkIdentity(body, { now });
  if (!checked.ok) return checked;
  const v = checked.value;
  return { ok: true, value: { fullName: v.full_name, dateOfBirth: v.date_of_birth, country: v.country, documentNumber: v.document_number } };
}

/** A wallet claim as the service takes it: the address in canonical form for its network. */
export interface WalletClaimInput extends ParsedAddress {
  challengeId: string;
  signature: string;
}

const claimSchema = Joi.object({
  network: Joi.string().trim().lowercase().valid('evm', 'solana').required(),
  // Judged against the network chosen: an EVM address is not a valid Solana one. Any value, so that an empty
  // field is told which kind of address it needs too.
  address: Joi.any()
    .required()
    .custom((value: unknown, helpers) => {
      const network = (helpers.state.ancestors as Array<{ network?: unknown }>)[0].network;
      const parsed = network === 'evm' || network === 'solana' ? parseAddressFor(network, value) : null;
      return parsed ? parsed.address : fail(helpers, 'bad_request', `Enter a valid ${network === 'solana' ? 'Solana' : 'EVM'} wallet address.`);
    }),
  signature: Joi.string().trim().required(),
  challenge_id: Joi.string()
    .trim()
    .pattern(/^[0-9a-f-]{36}$/i)
    .required(),
});

const checkClaim = formValidator<{ network: ParsedAddress['network']; address: string; signature: string; challenge_id: string }>(claimSchema, {
  network: 'Choose EVM or Solana.',
  address: 'Enter a valid wallet address.',
  signature: 'Paste the signature your wallet produced.',
  challenge_id: 'The challenge is missing; reload the page.',
});

export function parseWalletClaimForm(body: unknown): FormOutcome<WalletClaimInput> {
  const checked = checkClaim(body);
  if (!checked.ok) return checked;
  const { network, address, signature, challenge_id: challengeId } = checked.value;
  return { ok: true, value: { network, address, signature, challengeId } };
}
