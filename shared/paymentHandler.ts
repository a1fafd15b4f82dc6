// MPP payment-handler config: a builder and a joi validator for the
// `com.<vendor>.payment.mpp` binding a merchant publishes in its UCP-style profile at `/.well-known/ucp`.
// Additional properties are allowed at every level (the format is extensible, and a newer field must not make
// a profile invalid): validation checks what we know and
// passes everything else through untouched.
import Joi from 'joi';

/** Reverse-DNS handler id pattern (`com.vendor.payment.mpp`). */
export const HANDLER_ID_PATTERN = /^[a-z](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9_])?)+$/;
/** Default binding id (configurable; must match HANDLER_ID_PATTERN). */
export const DEFAULT_MPP_HANDLER_ID = 'com.kya.payment.mpp';

export const MPP_NETWORKS = ['tempo-mainnet', 'tempo-testnet', 'mpp-solana-mainnet', 'mpp-solana-devnet'] as const;
export type MppNetwork = (typeof MPP_NETWORKS)[number];

/** EVM-style MPP networks and their chain ids; the Solana networks carry none. */
export const MPP_CHAIN_IDS: Readonly<Partial<Record<MppNetwork, number>>> = Object.freeze({
  'tempo-mainnet': 4217,
  'tempo-testnet': 42431,
});

export interface MppNetworkEntry {
  network: MppNetwork;
  /** EVM-style chains only (4217 Tempo mainnet, 42431 Tempo testnet); omitted for Solana. */
  chain_id?: number;
  /** Static settlement address; omit when recipients are per order. */
  recipient?: string;
  [extra: string]: unknown;
}

export interface MppHandlerConfig {
  networks: MppNetworkEntry[];
  [extra: string]: unknown;
}

/** One entry of a profile's `payment_handlers[<id>]` list (UCP handler declaration). */
export interface PaymentHandlerEntry {
  id: string;
  version: string;
  spec?: string;
  schema?: string;
  config: MppHandlerConfig;
  [extra: string]: unknown;
}

/** The merchant profile served at `/.well-known/ucp`. */
export interface MerchantProfile {
  ucp: {
    version: string;
    payment_handlers: Record<string, PaymentHandlerEntry[]>;
    [extra: string]: unknown;
  };
  [extra: string]: unknown;
}

/** `com.<vendor>.payment.mpp` for a vendor label (`kya` → `com.kya.payment.mpp`). */
export function mppHandlerId(vendor: string): string {
  const id = `com.${vendor}.payment.mpp`;
  if (!HANDLER_ID_PATTERN.test(id)) throw new TypeError(`vendor "${vendor}" does not form a reverse-DNS handler id (got "${id}")`);
  return id;
}

const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SOLANA_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const DATE_VERSION = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;

const networkEntrySchema = Joi.object({
  network: Joi.string()
    .valid(...MPP_NETWORKS)
    .required(),
  chain_id: Joi.number()
    .integer()
    .strict()
    // chain_id belongs to the EVM-style networks only, and must be the one that network uses.
    .when('network', { is: 'tempo-mainnet', then: Joi.valid(4217) })
    .when('network', { is: 'tempo-testnet', then: Joi.valid(42431) })
    .when('network', { is: Joi.valid('mpp-solana-mainnet', 'mpp-solana-devnet'), then: Joi.forbidden() }),
  recipient: Joi.string().when('network', {
    is: Joi.valid('tempo-mainnet', 'tempo-testnet'),
    then: Joi.string().pattern(EVM_ADDRESS).message('{{#label}} must be a 0x-prefixed 40-hex address on a Tempo network'),
    otherwise: Joi.string().pattern(SOLANA_ADDRESS).message('{{#label}} must be a base58 address of 32 to 44 characters on a Solana network'),
  }),
}).unknown(true);

export const mppHandlerConfigSchema = Joi.object({
  networks: Joi.array().items(networkEntrySchema).min(1).required(),
}).unknown(true);

export const paymentHandlerEntrySchema = Joi.object({
  id: Joi.string().min(1).max(200).required(),
  version: Joi.string().pattern(DATE_VERSION).required().messages({ 'string.pattern.base': '{{#label}} must be a date YYYY-MM-DD' }),
  spec: Joi.string().uri({ scheme: ['http', 'https'] }),
  schema: Joi.string().uri({ scheme: ['http', 'https'] }),
  config: mppHandlerConfigSchema.required(),
}).unknown(true);

export const merchantProfileSchema = Joi.object({
  ucp: Joi.object({
    version: Joi.string().pattern(DATE_VERSION).required().messages({ 'string.pattern.base': '{{#label}} must be a date YYYY-MM-DD' }),
    payment_handlers: Joi.object()
      .pattern(
        Joi.string().pattern(HANDLER_ID_PATTERN).message('payment handler id {{#value}} must be a reverse-DNS name (e.g. com.kya.payment.mpp)'),
        Joi.array().items(paymentHandlerEntrySchema).min(1),
      )
      .required(),
  })
    .unknown(true)
    .required(),
}).unknown(true);

export interface ValidationProblem {
  field: string;
  message: string;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; problems: ValidationProblem[] };

function run<T>(schema: Joi.Schema, value: unknown): ValidationResult<T> {
  const { error, value: out } = schema.validate(value, { abortEarly: false, convert: false }) as { error?: Joi.ValidationError; value: unknown };
  if (!error) return { ok: true, value: out as T };
  return {
    ok: false,
    problems: error.details.map((d) => ({ field: d.path.join('.') || '(root)', message: d.message.replace(/^"[^"]*" /, '') })),
  };
}

/** Validates the `config` object of an MPP handler binding. */
export function validateMppHandlerConfig(value: unknown): ValidationResult<MppHandlerConfig> {
  return run(mppHandlerConfigSchema, value);
}

/** Validates a whole merchant profile (`/.well-known/ucp`). */
export function validateMerchantProfile(value: unknown): ValidationResult<MerchantProfile> {
  return run(merchantProfileSchema, value);
}

export interface MppNetworkInput {
  network: MppNetwork;
  /** Defaults to the network's own chain id for Tempo networks. */
  chainId?: number;
  recipient?: string;
  /** Passed through verbatim (additional properties are allowed). */
  extra?: Record<string, unknown>;
}

/**
 * Builds a validated MPP handler config. Tempo entries get their chain id filled in when omitted so agents
 * can match the challenge's chain without a lookup table; a bad entry throws naming the field.
 */
export function buildMppHandlerConfig(networks: MppNetworkInput[], extra: Record<string, unknown> = {}): MppHandlerConfig {
  const config: MppHandlerConfig = {
    ...extra,
    networks: (networks ?? []).map((n) => {
      const entry: MppNetworkEntry = { ...n.extra, network: n.network };
      const chainId = n.chainId ?? MPP_CHAIN_IDS[n.network];
      if (chainId !== undefined) entry.chain_id = chainId;
      if (n.recipient !== undefined) entry.recipient = n.recipient;
      return entry;
    }),
  };
  const checked = validateMppHandlerConfig(config);
  if (!checked.ok) throw new TypeError(`Invalid MPP payment handler config: ${describe(checked.problems)}`);
  return checked.value;
}

export interface MerchantProfileInput {
  networks: MppNetworkInput[];
  /** Binding id; default `com.kya.payment.mpp`. */
  handlerId?: string;
  /** Handler declaration version (YYYY-MM-DD); default `2026-01-11`. */
  version?: string;
  /** Profile version (YYYY-MM-DD); default the handler version. */
  profileVersion?: string;
  spec?: string;
  schema?: string;
  /** Extra properties merged into the handler `config`. */
  configExtra?: Record<string, unknown>;
}

export const DEFAULT_HANDLER_VERSION = '2026-01-11';

/** Builds the `/.well-known/ucp` profile with one MPP handler binding; throws naming the bad field. */
export function buildMerchantProfile(input: MerchantProfileInput): MerchantProfile {
  const handlerId = input.handlerId ?? DEFAULT_MPP_HANDLER_ID;
  const version = input.version ?? DEFAULT_HANDLER_VERSION;
  const entry: PaymentHandlerEntry = { id: handlerId, version, config: buildMppHandlerConfig(input.networks, input.configExtra) };
  if (input.spec !== undefined) entry.spec = input.spec;
  if (input.schema !== undefined) entry.schema = input.schema;
  const profile: MerchantProfile = { ucp: { version: input.profileVersion ?? version, payment_handlers: { [handlerId]: [entry] } } };
  const checked = validateMerchantProfile(profile);
  if (!checked.ok) throw new TypeError(`Invalid merchant profile: ${describe(checked.problems)}`);
  return checked.value;
}

function describe(problems: ValidationProblem[]): string {
  return problems.map((p) => `${p.field} ${p.message}`).join('; ');
}
