// The only reader of process.env: one joi schema → a frozen, typed Config passed down to everything else.
// A bad value stops start-up with a message naming the variable (see ConfigError).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import Joi from 'joi';
import type { Tier } from '../shared/types';

export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  /** 'embedded' = PGlite + in-process stores; 'external' = PostgreSQL (+ Redis when REDIS_URL is set). */
  mode: 'embedded' | 'external';
  databaseUrl: string | null;
  dataDir: string;
  redisUrl: string | null;
  redisPrefix: string;
  publicBaseUrl: string;
  signupUrl: string;
  supportEmail: string;
  supportSubject: string;
  trustProxy: boolean | number | string;
  logLevel: string;
  bodyLimit: string;
  /** HMAC key for operator handles, CSRF tokens and other server-side MACs. */
  serverSecret: string;
  /** 32-byte AES-256-GCM key for KYC PII at rest. */
  piiKey: Buffer;
  /** Longest wait on one PostgreSQL or Redis call before it fails and opens that dependency's circuit. */
  dependencyTimeoutMs: number;
  /** How long the group commit collects audit rows and quota increments before writing them in one statement. */
  groupCommitMs: number;
  /** Whether each audit/quota batch waits for its WAL flush before the answers it holds are released. */
  meteredSynchronousCommit: boolean;
  /** In-process identity state: entries older than ttlMs are never used (0 disables the cache); max entries per map. */
  identityCache: { ttlMs: number; max: number };
  dbPoolMax: number;
  shutdownTimeoutMs: number;
  tiers: Record<Tier, { quota: number | null; rps: number | null }>;
  /** Failed API-key authentications per client address per minute before further attempts get 429. */
  authFailuresPerMinute: number;
  sessions: { ttlSeconds: number; tokenTtlSeconds: number; refreshTokenTtlDays: number; publicPerIpPerHour: number; pollPerMinute: number };
  sanctions: {
    freshnessDays: number;
    /** A file, directory, http(s) URL, or `bundled` (the OFAC snapshot shipped in the repository). */
    walletSource: string | null;
    walletFormat: 'auto' | 'sdn_advanced' | 'sdn_xml' | 'sdn_csv' | 'plain';
    /** The bundled snapshot serves until the first successful fetch of the (default, live) wallet source. */
    walletSeedBundled: boolean;
    nameSource: string | null;
    nameAltSource: string | null;
    nameSeedBundled: boolean;
    refreshSeconds: number;
    /** A list older than this (by its as_of) counts as unavailable; null = no limit. */
    maxAgeHours: number | null;
    /** Name-screening score at or above which an identity is flagged. */
    matchThreshold: number;
  };
  kyc: { provider: 'sandbox' | 'stripe'; stripeSecretKey: string | null; stripeWebhookSecret: string | null; stripeApiBase: string };
  reputation: { chainsFile: string | null; staleHours: number; rescoreIntervalSeconds: number };
  paymentHandler: { vendorId: string };
  demoAccount: boolean;
  /** /readyz answers 503 when Redis is unreachable (true) or 200 `degraded` so instances stay in rotation (false). */
  readinessRequiresRedis: boolean;
  /** HTTP worker processes (node:cluster), e.g. one per core; 1 = this process serves. */
  webConcurrency: number;
  /** Outbound webhooks: first retry after retryBaseMs, doubling (capped at 6 h), given up after maxAgeHours. */
  webhooks: { retryBaseMs: number; maxAgeHours: number; sweepSeconds: number; timeoutMs: number };
  /** Dashboard sign-in: sessions end after idleMinutes without a request. */
  dashboard: { idleMinutes: number; loginLinkMinutes: number };
  /** Embedded mode: loopback port of the local admin channel the CLI uses while the server runs (0 = any free port). */
  adminChannelPort: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`Invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

const port = Joi.number().integer().min(0).max(65535);
const positiveInt = Joi.number().integer().min(1);
const optionalString = Joi.string().trim().empty('').default(null);

const schema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'production', 'test').default('development'),
  PORT: port.default(3000),
  HOST: Joi.string().default('0.0.0.0'),
  DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .empty('')
    .default(null),
  DATA_DIR: Joi.string().default('./data'),
  REDIS_URL: Joi.string()
    .uri({ scheme: ['redis', 'rediss'] })
    .empty('')
    .default(null),
  REDIS_PREFIX: Joi.string()
    .pattern(/^[a-z0-9:_-]+$/i)
    .default('kya:')
    .messages({ 'string.pattern.base': 'may contain only letters, digits, ":", "_" and "-"' }),
  PUBLIC_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .empty('')
    .default(null),
  SIGNUP_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://kya.dev/signup'),
  SUPPORT_EMAIL: Joi.string().email({ tlds: false }).default('compliance@kya.dev'),
  SUPPORT_SUBJECT: Joi.string().default('Verification review'),
  TRUST_PROXY: Joi.alternatives(Joi.boolean(), Joi.number().integer().min(0), Joi.string()).default(false),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  BODY_LIMIT: Joi.string()
    .pattern(/^\d+(b|kb|mb)$/i)
    .default('100kb')
    .messages({ 'string.pattern.base': 'must be a size such as 100kb or 1mb' }),
  SERVER_SECRET: Joi.string().min(32).empty('').default(null),
  PII_ENCRYPTION_KEY: Joi.string()
    .pattern(/^[0-9a-fA-F]{64}$/)
    .empty('')
    .default(null)
    .messages({ 'string.pattern.base': 'must be 64 hex characters (32 bytes)' }),
  // 1 s: one timed-out dependency plus the rest of the request stays within the 1.5 s bound on any answer.
  DEPENDENCY_TIMEOUT_MS: positiveInt.max(30000).default(1000),
  // 0: a batch is written at the end of the event-loop turn that started it; under load batches still grow,
  // because rows arriving while a write is in flight form the next batch.
  GROUP_COMMIT_MS: Joi.number().integer().min(0).max(50).default(0),
  // off: each batch is committed without waiting for its WAL flush (PostgreSQL's synchronous_commit, for these
  // statements only). Nothing answered is lost when an app instance dies; a crash of the database server itself
  // can lose the last few hundred milliseconds of audit rows and quota counts. on: flushed before the answer.
  METERED_SYNCHRONOUS_COMMIT: Joi.boolean().truthy('on').falsy('off').default(false),
  // Backstop for a lost invalidation message: no cached identity state is used longer than this.
  IDENTITY_CACHE_TTL_MS: Joi.number().integer().min(0).max(30000).default(5000),
  IDENTITY_CACHE_MAX: positiveInt.max(5_000_000).default(100_000),
  DB_POOL_MAX: positiveInt.max(200).default(10),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10000),
  QUOTA_FREE: positiveInt.default(20),
  QUOTA_PAID: positiveInt.default(10000),
  RPS_FREE: positiveInt.default(2),
  RPS_PAID: positiveInt.default(20),
  SESSION_TTL_SECONDS: positiveInt.default(3600),
  TOKEN_TTL_SECONDS: positiveInt.default(86400),
  REFRESH_TOKEN_TTL_DAYS: positiveInt.default(90),
  PUBLIC_SESSIONS_PER_IP_PER_HOUR: positiveInt.default(10),
  POLL_PER_MINUTE: positiveInt.default(30),
  AUTH_FAILURES_PER_MINUTE: positiveInt.default(30),
  SANCTIONS_FRESHNESS_DAYS: positiveInt.default(90),
  SANCTIONS_WALLET_SOURCE: optionalString,
  SANCTIONS_WALLET_FORMAT: Joi.string().valid('auto', 'sdn_advanced', 'sdn_xml', 'sdn_csv', 'plain').default('auto'),
  SANCTIONS_NAME_SOURCE: optionalString,
  SANCTIONS_NAME_ALT_SOURCE: optionalString,
  SANCTIONS_REFRESH_SECONDS: positiveInt.default(3600),
  SANCTIONS_MAX_AGE_HOURS: positiveInt.empty('').default(null),
  SANCTIONS_MATCH_THRESHOLD: Joi.number().min(0.5).max(1).empty('').default(0.85),
  KYC_PROVIDER: Joi.string().valid('sandbox', 'stripe').default('sandbox'),
  STRIPE_SECRET_KEY: optionalString,
  STRIPE_WEBHOOK_SECRET: optionalString,
  STRIPE_API_BASE: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://api.stripe.com'),
  REPUTATION_CHAINS_FILE: optionalString,
  REPUTATION_STALE_HOURS: positiveInt.default(24),
  RESCORE_INTERVAL_SECONDS: positiveInt.default(3600),
  PAYMENT_HANDLER_VENDOR_ID: Joi.string()
    .pattern(/^[a-z](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9_])?)+$/)
    .default('com.kya.payment.mpp'),
  DEMO_ACCOUNT: Joi.boolean().truthy('1').falsy('0').default(true),
  READINESS_REQUIRES_REDIS: Joi.boolean().truthy('1').falsy('0').default(true),
  WEB_CONCURRENCY: Joi.number().integer().min(1).max(64).default(1),
  WEBHOOK_RETRY_BASE_MS: positiveInt.default(30000),
  WEBHOOK_MAX_AGE_HOURS: positiveInt.max(24 * 30).default(72),
  WEBHOOK_SWEEP_SECONDS: positiveInt.default(15),
  WEBHOOK_TIMEOUT_MS: positiveInt.max(60000).default(10000),
  DASHBOARD_IDLE_MINUTES: positiveInt.max(24 * 60).default(30),
  ADMIN_CHANNEL_PORT: port.default(0),
})
  .when(Joi.object({ KYC_PROVIDER: Joi.valid('stripe').required() }).unknown(), {
    then: Joi.object({ STRIPE_SECRET_KEY: Joi.required(), STRIPE_WEBHOOK_SECRET: Joi.required() }),
  })
  .unknown(true);

/** Secrets the embedded mode generates once and keeps under DATA_DIR, so a demo needs no setup. */
function embeddedSecrets(dataDir: string): { serverSecret: string; piiKey: string } {
  const file = path.join(dataDir, 'secrets.json');
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')) as { serverSecret: string; piiKey: string };
  fs.mkdirSync(dataDir, { recursive: true });
  const secrets = { serverSecret: crypto.randomBytes(32).toString('hex'), piiKey: crypto.randomBytes(32).toString('hex') };
  fs.writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
  return secrets;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  /* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call --
     joi hands back the validated environment untyped; the Config literal below is where it becomes typed. */
  const { error, value: v } = schema.validate(env, { abortEarly: true, convert: true });
  if (error) {
    const detail = error.details[0];
    throw new ConfigError(String(detail.path.join('.')), detail.message.replace(/^"[^"]+" /, ''));
  }
  const mode = v.DATABASE_URL ? 'external' : 'embedded';
  if (v.WEB_CONCURRENCY > 1 && (mode === 'embedded' || !v.REDIS_URL)) {
    // PGlite is single-process, and without Redis each worker would keep its own limits and quota counters.
    throw new ConfigError('WEB_CONCURRENCY', 'above 1 needs DATABASE_URL and REDIS_URL (shared state for all workers)');
  }
  let serverSecret: string | null = v.SERVER_SECRET;
  let piiHex: string | null = v.PII_ENCRYPTION_KEY;
  const production = v.NODE_ENV === 'production';
  if (!serverSecret || !piiHex) {
    if (production) {
      // Generated secrets are a demo convenience: in production they would be lost with the data directory
      // (and every MAC and encrypted record with them), so they must be set explicitly, in either mode.
      const missing = [serverSecret ? null : 'SERVER_SECRET', piiHex ? null : 'PII_ENCRYPTION_KEY'].filter((m): m is string => m !== null);
      throw new ConfigError(missing.join(' and '), `${missing.length > 1 ? 'are' : 'is'} required in production (never generated there)`);
    }
    const generated = embeddedSecrets(path.resolve(v.DATA_DIR));
    serverSecret ??= generated.serverSecret;
    piiHex ??= generated.piiKey;
  }
  const config: Config = {
    env: v.NODE_ENV,
    port: v.PORT,
    host: v.HOST,
    mode,
    databaseUrl: v.DATABASE_URL,
    dataDir: path.resolve(v.DATA_DIR),
    redisUrl: v.REDIS_URL,
    redisPrefix: v.REDIS_PREFIX,
    publicBaseUrl: (v.PUBLIC_BASE_URL ?? `http://localhost:${v.PORT}`).replace(/\/+$/, ''),
    signupUrl: v.SIGNUP_URL,
    supportEmail: v.SUPPORT_EMAIL,
    supportSubject: v.SUPPORT_SUBJECT,
    trustProxy: parseTrustProxy(v.TRUST_PROXY),
    logLevel: v.LOG_LEVEL,
    bodyLimit: v.BODY_LIMIT,
    serverSecret,
    piiKey: Buffer.from(piiHex, 'hex'),
    dependencyTimeoutMs: v.DEPENDENCY_TIMEOUT_MS,
    groupCommitMs: v.GROUP_COMMIT_MS,
    meteredSynchronousCommit: v.METERED_SYNCHRONOUS_COMMIT,
    identityCache: { ttlMs: v.IDENTITY_CACHE_TTL_MS, max: v.IDENTITY_CACHE_MAX },
    dbPoolMax: v.DB_POOL_MAX,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    tiers: {
      free: { quota: v.QUOTA_FREE, rps: v.RPS_FREE },
      paid: { quota: v.QUOTA_PAID, rps: v.RPS_PAID },
      enterprise: { quota: null, rps: null },
    },
    authFailuresPerMinute: v.AUTH_FAILURES_PER_MINUTE,
    sessions: {
      ttlSeconds: v.SESSION_TTL_SECONDS,
      tokenTtlSeconds: v.TOKEN_TTL_SECONDS,
      refreshTokenTtlDays: v.REFRESH_TOKEN_TTL_DAYS,
      publicPerIpPerHour: v.PUBLIC_SESSIONS_PER_IP_PER_HOUR,
      pollPerMinute: v.POLL_PER_MINUTE,
    },
    sanctions: {
      freshnessDays: v.SANCTIONS_FRESHNESS_DAYS,
      ...sanctionsSources(v.NODE_ENV, v.SANCTIONS_WALLET_SOURCE, v.SANCTIONS_NAME_SOURCE, v.SANCTIONS_NAME_ALT_SOURCE),
      walletFormat: v.SANCTIONS_WALLET_FORMAT,
      refreshSeconds: v.SANCTIONS_REFRESH_SECONDS,
      maxAgeHours: v.SANCTIONS_MAX_AGE_HOURS,
      matchThreshold: v.SANCTIONS_MATCH_THRESHOLD,
    },
    kyc: {
      provider: v.KYC_PROVIDER,
      stripeSecretKey: v.STRIPE_SECRET_KEY,
      stripeWebhookSecret: v.STRIPE_WEBHOOK_SECRET,
      stripeApiBase: v.STRIPE_API_BASE,
    },
    reputation: {
      chainsFile: v.REPUTATION_CHAINS_FILE,
      staleHours: v.REPUTATION_STALE_HOURS,
      rescoreIntervalSeconds: v.RESCORE_INTERVAL_SECONDS,
    },
    paymentHandler: { vendorId: v.PAYMENT_HANDLER_VENDOR_ID },
    // Production never creates a demo merchant (nor prints its key), whatever DEMO_ACCOUNT says.
    demoAccount: production ? false : v.DEMO_ACCOUNT,
    readinessRequiresRedis: v.READINESS_REQUIRES_REDIS,
    webConcurrency: v.WEB_CONCURRENCY,
    webhooks: {
      retryBaseMs: v.WEBHOOK_RETRY_BASE_MS,
      maxAgeHours: v.WEBHOOK_MAX_AGE_HOURS,
      sweepSeconds: v.WEBHOOK_SWEEP_SECONDS,
      timeoutMs: v.WEBHOOK_TIMEOUT_MS,
    },
    dashboard: { idleMinutes: v.DASHBOARD_IDLE_MINUTES, loginLinkMinutes: 15 },
    adminChannelPort: v.ADMIN_CHANNEL_PORT,
  };
  /* eslint-enable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call */
  return deepFreeze(config);
}

/** OFAC's published downloads: SDN.CSV carries names, qualifiers and digital-currency addresses. */
export const OFAC_SDN_CSV_URL = 'https://www.treasury.gov/ofac/downloads/sdn.csv';
export const OFAC_ALT_CSV_URL = 'https://www.treasury.gov/ofac/downloads/alt.csv';

/**
 * Unset sources default to OFAC's live files in production (the bundled snapshot serving until the first
 * successful fetch) and to the bundled snapshot elsewhere, so development, tests and machines without internet
 * access never depend on the network. A configured source is used as given.
 */
function sanctionsSources(env: string, wallet: string | null, name: string | null, alt: string | null) {
  const production = env === 'production';
  return {
    walletSource: wallet ?? (production ? OFAC_SDN_CSV_URL : 'bundled'),
    walletSeedBundled: !wallet && production,
    nameSource: name ?? (production ? OFAC_SDN_CSV_URL : 'bundled'),
    nameAltSource: name ? alt : production ? (alt ?? OFAC_ALT_CSV_URL) : null,
    nameSeedBundled: !name && production,
  };
}

function parseTrustProxy(value: unknown): boolean | number | string {
  if (typeof value !== 'string') return value as boolean | number;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return /^\d+$/.test(value) ? Number(value) : value;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
