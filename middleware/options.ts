// The gate's public options (every field documented with its default) and parseOptions(), which validates
// them once at mount time and returns the frozen internal GateConfig the per-request code reads.
import crypto from 'node:crypto';
import { isChain, CHAINS } from '../shared/chains';
import { buildSignerConfig, USDC_BASE, USDC_BASE_SEPOLIA, type EvmAssetDomain, type PaymentSigner, type SignerConfig } from './signer';
import type { SessionBody, WirePolicy } from './wire';

export const GATE_VERSION = '0.1.0';

/**
 * What the gate decides with: `X-Operator-Token` first, then `X-Wallet-Address`; both sent when both present.
 * A wallet is a claim until the request proves it (see `trustUnsignedWalletHeader`).
 */
export interface GateIdentity {
  operatorToken?: string | null;
  walletAddress?: string | null;
  /** Same as `walletAddress` (the name other gates use); `walletAddress` wins when both are set. */
  address?: string | null;
}

export interface GatePolicy {
  /** Operator must have completed identity verification. Default: not required. */
  requireKyc?: boolean;
  /** Operator must pass name-based sanctions screening within the server's freshness window. Default: not required. */
  requireSanctionsClear?: boolean;
  /** Minimum age bracket, 18 or 21. Default: none. */
  minAge?: 18 | 21;
  /** ISO 3166-1 alpha-2 codes to block. Default: none. */
  blockedJurisdictions?: string[];
  /** ISO 3166-1 alpha-2 codes that pass; every other country is denied. Default: none (all pass). */
  allowedJurisdictions?: string[];
}

/** Session fields the merchant may set per request. */
export interface SessionOptions {
  context?: string;
  productName?: string;
}

export interface CreateSessionOptions<Req> {
  /** API key to mint sessions with, when it differs from the gate's. Default: the gate's `apiKey`. */
  apiKey?: string;
  /** Identity server to mint sessions on, when it differs from the gate's. Default: the gate's `baseUrl`. */
  baseUrl?: string;
  /** Free-form label stored with the session. Default: none. */
  context?: string;
  /** Shown on the verification page (max 200 characters). Default: none. */
  productName?: string;
  /** Per-request overrides of `context` / `productName`. Default: none. */
  getSessionOptions?: (req: Req) => SessionOptions | undefined | Promise<SessionOptions | undefined>;
  /**
   * Called with the freshly minted session before the denial is sent; may return extra top-level body fields.
   * Extras never overwrite the gate's own fields (error, decision, reasons, session fields, …). Default: none.
   */
  onBeforeSession?: (req: Req, session: SessionBody) => Record<string, unknown> | void | Promise<Record<string, unknown> | void>;
}

/** A pino-compatible subset; the gate logs capture failures at debug and misconfiguration at error. */
export interface GateLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface GateOptions<Req = unknown, Res = unknown> {
  /** Merchant API key (`as_live_…`), sent as `X-API-Key`. Required. */
  apiKey: string;
  /** Identity server base address, e.g. `https://id.example.com`. Required. */
  baseUrl: string;
  /** The compliance policy sent with every assess. Default: `{}` (no policy: the server allows and says `no_policy_applied`). */
  policy?: GatePolicy;
  /** Shorthand for `policy.requireKyc` (the ecosystem's flat option name). Default: unset. */
  requireKyc?: boolean;
  /** Shorthand for `policy.requireSanctionsClear`. Default: unset. */
  requireSanctionsClear?: boolean;
  /** Shorthand for `policy.minAge`. Default: unset. */
  minAge?: 18 | 21;
  /** Shorthand for `policy.blockedJurisdictions`. Default: unset. */
  blockedJurisdictions?: string[];
  /** Shorthand for `policy.allowedJurisdictions`. Default: unset. */
  allowedJurisdictions?: string[];
  /** Chain to score (`base`, `ethereum`, `arbitrum`, `optimism`, `polygon`, `tempo`, `solana`). Default: none (the server picks). */
  chain?: string;
  /** Per-request chain override; returning undefined falls back to `chain`. Default: none. */
  getChain?: (req: Req) => string | undefined;
  /**
   * Forgive identity-server outages only: when assess times out, the server is unreachable, answers 5xx, or
   * the merchant's quota is exhausted (`quota_exceeded`), the request passes with `degraded: true`, the
   * `infra_reason`, and the `degradedHeader` response header. Everything else is denied exactly as with
   * failOpen off: a request with no identity, an unknown or revoked credential, a wallet without a proof,
   * a rejected proof, a policy denial, a per-second rate limit, or a server that rejects the gate's own
   * request (bad API key, bad policy). Default: `false`.
   */
  failOpen?: boolean;
  /** Seconds an allow is cached per (identity, policy, chain, signer); 0 disables caching. Default: `300`. */
  cacheSeconds?: number;
  /** Maximum number of cached decisions (LRU). Default: `10000`. */
  cacheMaxEntries?: number;
  /** Per-attempt timeout of calls to the identity server, in ms (connecting, the answer's headers, each pause in its body). Default: `3000`. */
  timeoutMs?: number;
  /** `User-Agent` of calls to the identity server. Default: `kya-gate/<version>`. */
  userAgent?: string;
  /**
   * Reads the identity from the request. A wallet returned here still needs a proof in the same request
   * (payment signature or SIGN-IN-WITH-X), exactly like `X-Wallet-Address`. Default: `X-Operator-Token` and
   * `X-Wallet-Address` headers (or the `address` of a SIGN-IN-WITH-X proof sent alone).
   */
  extractIdentity?: (req: Req) => GateIdentity | null | undefined;
  /** Replaces the built-in payment-header signer extraction. Default: x402 v2/v1 and MPP headers. */
  extractSigner?: (req: Req) => PaymentSigner | null | undefined;
  /**
   * Takes over the denial response: called with the request, the response (Express, Fastify) or context (Hono)
   * and the denial ("reason"). If it sends a response (or, on Hono / Next.js / Fetch, returns a `Response`),
   * that is the answer; otherwise the gate sends its default body. Default: the gate's JSON denial.
   */
  onDenied?: (req: Req, res: Res, denial: GateDenial) => unknown;
  /**
   * Deny when the payment signer belongs to another operator than the identity (token mode, or a wallet
   * proven by SIGN-IN-WITH-X). A wallet identity whose only proof would be the payment is denied on a foreign
   * signer whatever this says, since the payment then proves nothing about the claimed wallet. Default: `true`.
   */
  enforceSignerMatch?: boolean;
  /** Mint a verification session for agents without identity or with a KYC-only denial. Default: off. */
  createSessionOnMissing?: CreateSessionOptions<Req> | false;
  /** `success`: report the payment wallet after a 2xx from the handler; `manual`: only via captureWallet(). Default: `'success'`. */
  captureOn?: 'success' | 'manual';
  /** Name of the response header set on every degraded pass (value: the infra reason). Default: `'X-Gate-Degraded'`. */
  degradedHeader?: string;
  /**
   * The merchant's public origin as buyers reach it, e.g. `https://shop.example.com` (behind a proxy: the
   * outside URL). Sign-In-With-X proofs must be signed for its host and origin; it is never taken from the
   * request's Host header, which the caller controls. Without it the gate accepts no SIGN-IN-WITH-X proof,
   * offers no challenge, and a wallet identity can only be proven by a payment signature. Default: unset.
   */
  publicOrigin?: string;
  /**
   * UNSAFE: trust `X-Wallet-Address` (or `extractIdentity`'s walletAddress) without any proof that the
   * caller controls the wallet. Anyone can then name a verified person's wallet and pass as them. Only for a
   * route where the gate's answer does not matter for compliance, or during a migration. Default: `false`
   * (a wallet identity needs a payment signature or a SIGN-IN-WITH-X proof in the same request).
   */
  trustUnsignedWalletHeader?: boolean;
  /** EIP-3009 tokens whose EIP-712 domain signatures are checked against. Default: USDC on Base and on Base Sepolia. */
  x402Assets?: EvmAssetDomain[];
  /** Where capture failures (debug) and misconfiguration (error) are logged. Default: silent. */
  logger?: GateLogger;
  /** Milliseconds clock for cache expiry (tests inject one). Default: `performance.now`. */
  now?: () => number;
}

/** What a denial looks like to `onDenied` (the "reason") and to the default response. */
export interface GateDenial {
  status: number;
  code: string;
  /** Human-readable, the same as `body.error.message`. */
  message: string;
  /** Decision reasons (the server's, or the gate's own code). */
  reasons: string[];
  /** The JSON body the gate sends by default. */
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** Verification bootstrap fields, when a session came with the denial. */
  verify_url?: string;
  session_id?: string;
  poll_secret?: string;
  poll_url?: string;
}

/** The resolved configuration (internal; built once by parseOptions). */
export interface GateConfig<Req = unknown, Res = unknown> {
  apiKey: string;
  baseUrl: URL;
  policy: WirePolicy | undefined;
  /** Stable fingerprint of the policy for cache keys. */
  policyKey: string;
  chain: string | undefined;
  getChain: ((req: Req) => string | undefined) | undefined;
  failOpen: boolean;
  cacheTtlMs: number;
  cacheMaxEntries: number;
  timeoutMs: number;
  userAgent: string;
  extractIdentity: ((req: Req) => GateIdentity | null | undefined) | undefined;
  extractSigner: ((req: Req) => PaymentSigner | null | undefined) | undefined;
  onDenied: ((req: Req, res: Res, denial: GateDenial) => unknown) | undefined;
  enforceSignerMatch: boolean;
  session: CreateSessionOptions<Req> | null;
  captureOn: 'success' | 'manual';
  degradedHeader: string;
  /** Host and origin SIGN-IN-WITH-X proofs must be signed for; null = proofs not accepted. */
  publicOrigin: { domain: string; origin: string } | null;
  trustUnsignedWalletHeader: boolean;
  signer: SignerConfig;
  logger: GateLogger;
  now: () => number;
}

export class GateOptionsError extends TypeError {
  constructor(message: string) {
    super(`kya gate: ${message}`);
    this.name = 'GateOptionsError';
  }
}

const COUNTRY = /^[A-Z]{2}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const KNOWN_OPTIONS = new Set([
  'apiKey',
  'baseUrl',
  'policy',
  'requireKyc',
  'requireSanctionsClear',
  'minAge',
  'blockedJurisdictions',
  'allowedJurisdictions',
  'chain',
  'getChain',
  'failOpen',
  'cacheSeconds',
  'cacheMaxEntries',
  'timeoutMs',
  'userAgent',
  'extractIdentity',
  'extractSigner',
  'onDenied',
  'enforceSignerMatch',
  'createSessionOnMissing',
  'captureOn',
  'degradedHeader',
  'publicOrigin',
  'trustUnsignedWalletHeader',
  'x402Assets',
  'logger',
  'now',
]);
const silentLogger: GateLogger = { debug() {}, warn() {}, error() {} };

function fail(message: string): never {
  throw new GateOptionsError(message);
}

function optionalBoolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'boolean') fail(`${name} must be true or false (got ${JSON.stringify(value)})`);
  return value;
}

function optionalFunction<F>(value: unknown, name: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') fail(`${name} must be a function`);
  return value as F;
}

function countries(value: unknown, name: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) fail(`${name} must be an array of ISO 3166-1 alpha-2 codes such as ["US", "DE"]`);
  if (value.length > 300) fail(`${name} has ${value.length} entries; there are fewer than 300 countries`);
  value.forEach((c, i) => {
    if (typeof c !== 'string' || !COUNTRY.test(c)) fail(`${name}[${i}] must be an uppercase ISO 3166-1 alpha-2 code (got ${JSON.stringify(c)})`);
  });
  return [...new Set(value as string[])].sort();
}

function parsePolicy(options: Pick<GateOptions<unknown, unknown>, 'policy'>): WirePolicy | undefined {
  if (options.policy !== undefined && (options.policy === null || typeof options.policy !== 'object' || Array.isArray(options.policy))) {
    fail('policy must be an object such as { requireKyc: true, minAge: 18 }');
  }
  const nested = (options.policy ?? {}) as Record<string, unknown>;
  const known = ['requireKyc', 'requireSanctionsClear', 'minAge', 'blockedJurisdictions', 'allowedJurisdictions'] as const;
  for (const key of Object.keys(nested)) {
    if (!(known as readonly string[]).includes(key)) fail(`policy.${key} is not a policy option (expected one of ${known.join(', ')})`);
  }
  const flat = options as unknown as Record<string, unknown>;
  const pick = (key: (typeof known)[number]) => {
    if (nested[key] !== undefined && flat[key] !== undefined) fail(`${key} is set both at the top level and in policy; set it once`);
    return nested[key] ?? flat[key];
  };
  const where = (key: string) => (nested[key] !== undefined ? `policy.${key}` : key);
  const policy: WirePolicy = {};
  const requireKyc = optionalBoolean(pick('requireKyc'), where('requireKyc'));
  const requireSanctionsClear = optionalBoolean(pick('requireSanctionsClear'), where('requireSanctionsClear'));
  const minAge = pick('minAge');
  if (requireKyc !== undefined) policy.require_kyc = requireKyc;
  if (requireSanctionsClear !== undefined) policy.require_sanctions_clear = requireSanctionsClear;
  if (minAge !== undefined) {
    if (minAge !== 18 && minAge !== 21) fail(`${where('minAge')} must be 18 or 21 (got ${JSON.stringify(minAge)})`);
    policy.min_age = minAge;
  }
  const blocked = countries(pick('blockedJurisdictions'), where('blockedJurisdictions'));
  const allowed = countries(pick('allowedJurisdictions'), where('allowedJurisdictions'));
  if (blocked) policy.blocked_jurisdictions = blocked;
  if (allowed) policy.allowed_jurisdictions = allowed;
  return Object.keys(policy).length > 0 ? policy : undefined;
}

function parseSession<Req>(value: unknown): CreateSessionOptions<Req> | null {
  if (value === undefined || value === false || value === null) return null;
  if (value === true) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    fail('createSessionOnMissing must be an object { context?, productName?, getSessionOptions?, onBeforeSession? } or false');
  const s = { ...(value as Record<string, unknown>) };
  for (const key of Object.keys(s)) {
    if (!['context', 'productName', 'getSessionOptions', 'onBeforeSession', 'apiKey', 'baseUrl'].includes(key))
      fail(`createSessionOnMissing.${key} is not a session option`);
  }
  if (s.apiKey !== undefined && (typeof s.apiKey !== 'string' || s.apiKey.trim().length === 0 || /\s/.test(s.apiKey)))
    fail('createSessionOnMissing.apiKey must be a non-empty API key without whitespace');
  if (s.baseUrl !== undefined) {
    let url: URL | null = null;
    try {
      url = typeof s.baseUrl === 'string' ? new URL(s.baseUrl) : null;
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      fail(`createSessionOnMissing.baseUrl must be an absolute http(s) URL (got ${JSON.stringify(s.baseUrl)})`);
    if (!url.pathname.endsWith('/')) url.pathname += '/';
    s.baseUrl = url.toString();
  }
  if (s.context !== undefined && typeof s.context !== 'string') fail('createSessionOnMissing.context must be a string');
  if (s.productName !== undefined && (typeof s.productName !== 'string' || s.productName.length > 200)) {
    fail('createSessionOnMissing.productName must be a string of at most 200 characters');
  }
  optionalFunction(s.getSessionOptions, 'createSessionOnMissing.getSessionOptions');
  optionalFunction(s.onBeforeSession, 'createSessionOnMissing.onBeforeSession');
  return Object.freeze({ ...s });
}

function parsePublicOrigin(value: unknown): { domain: string; origin: string } | null {
  if (value === undefined) return null;
  const hint = 'publicOrigin must be the absolute http(s) origin buyers use, such as "https://shop.example.com"';
  if (typeof value !== 'string') fail(hint);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`${hint} (got ${JSON.stringify(value)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(hint);
  if (url.pathname !== '/' || url.search || url.hash || url.username || url.password)
    fail(`${hint}, without a path, query or credentials (got ${JSON.stringify(value)})`);
  return Object.freeze({ domain: url.host, origin: url.origin });
}

function integerIn(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    fail(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  return value;
}

/** Validates options once, at mount time; throws GateOptionsError naming the option. */
export function parseOptions<Req, Res>(options: GateOptions<Req, Res>): Readonly<GateConfig<Req, Res>> {
  if (!options || typeof options !== 'object') fail('createGate(options) needs an options object with at least apiKey and baseUrl');
  for (const key of Object.keys(options)) {
    // A misspelt option (failopen, cache_seconds) would otherwise be ignored silently.
    if (!KNOWN_OPTIONS.has(key)) fail(`${key} is not a gate option (known: ${[...KNOWN_OPTIONS].join(', ')})`);
  }
  if (typeof options.apiKey !== 'string' || options.apiKey.trim().length === 0) fail('apiKey is required (your merchant API key, as_live_…)');
  if (/\s/.test(options.apiKey)) fail('apiKey must not contain whitespace');
  if (typeof options.baseUrl !== 'string') fail('baseUrl is required (the identity server address, e.g. https://id.example.com)');
  let baseUrl: URL;
  try {
    baseUrl = new URL(options.baseUrl);
  } catch {
    fail(`baseUrl must be an absolute http(s) URL (got ${JSON.stringify(options.baseUrl)})`);
  }
  if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') fail('baseUrl must use http or https');
  if (!baseUrl.pathname.endsWith('/')) baseUrl.pathname += '/';

  if (options.chain !== undefined && !isChain(options.chain)) fail(`chain must be one of ${CHAINS.join(', ')} (got ${JSON.stringify(options.chain)})`);
  const policy = parsePolicy(options);
  const cacheSeconds = integerIn(options.cacheSeconds, 'cacheSeconds', 0, 86400, 300);
  const userAgent = options.userAgent ?? `kya-gate/${GATE_VERSION}`;
  if (typeof userAgent !== 'string' || userAgent.length === 0 || /[\r\n]/.test(userAgent)) fail('userAgent must be a non-empty single-line string');
  if (options.captureOn !== undefined && options.captureOn !== 'success' && options.captureOn !== 'manual')
    fail(`captureOn must be 'success' or 'manual' (got ${JSON.stringify(options.captureOn)})`);
  const degradedHeader: unknown = options.degradedHeader ?? 'X-Gate-Degraded';
  // A degraded pass is always marked: the buyer's request was not checked, and whoever reads the response must know.
  if (typeof degradedHeader !== 'string' || !HEADER_NAME.test(degradedHeader))
    fail('degradedHeader must be a valid header name such as "X-Gate-Degraded" (degraded passes are always marked)');
  const publicOrigin = parsePublicOrigin(options.publicOrigin);
  if (options.x402Assets !== undefined && !Array.isArray(options.x402Assets)) fail('x402Assets must be an array of {network, asset, name, version}');
  let signer: SignerConfig;
  try {
    signer = buildSignerConfig(options.x402Assets ?? [USDC_BASE, USDC_BASE_SEPOLIA]);
  } catch (err) {
    fail((err as Error).message);
  }
  const logger = options.logger ?? silentLogger;
  if (typeof logger.debug !== 'function' || typeof logger.warn !== 'function' || typeof logger.error !== 'function')
    fail('logger must have debug, warn and error methods (pino works)');

  return Object.freeze({
    apiKey: options.apiKey,
    baseUrl,
    policy,
    policyKey: policy ? crypto.createHash('sha256').update(JSON.stringify(policy)).digest('base64url').slice(0, 16) : '-',
    chain: options.chain,
    getChain: optionalFunction<(req: Req) => string | undefined>(options.getChain, 'getChain'),
    failOpen: optionalBoolean(options.failOpen, 'failOpen') ?? false,
    cacheTtlMs: cacheSeconds * 1000,
    cacheMaxEntries: integerIn(options.cacheMaxEntries, 'cacheMaxEntries', 1, 10_000_000, 10_000),
    timeoutMs: integerIn(options.timeoutMs, 'timeoutMs', 1, 120_000, 3000),
    userAgent,
    extractIdentity: optionalFunction<(req: Req) => GateIdentity | null | undefined>(options.extractIdentity, 'extractIdentity'),
    extractSigner: optionalFunction<(req: Req) => PaymentSigner | null | undefined>(options.extractSigner, 'extractSigner'),
    onDenied: optionalFunction<(req: Req, res: Res, denial: GateDenial) => unknown>(options.onDenied, 'onDenied'),
    enforceSignerMatch: optionalBoolean(options.enforceSignerMatch, 'enforceSignerMatch') ?? true,
    session: parseSession<Req>(options.createSessionOnMissing),
    captureOn: options.captureOn ?? 'success',
    degradedHeader,
    publicOrigin,
    trustUnsignedWalletHeader: optionalBoolean(options.trustUnsignedWalletHeader, 'trustUnsignedWalletHeader') ?? false,
    signer,
    logger,
    now: optionalFunction<() => number>(options.now, 'now') ?? (() => performance.now()),
  });
}
