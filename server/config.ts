// The only reader of process.env: one joi schema → a frozen, typed Config passed down to everything else.
// A bad value stops start-up with a message naming the variable (see ConfigError).
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import Joi from 'joi';

export type Tier = 'free' | 'paid' | 'enterprise';

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
  dependencyTimeoutMs: number;
  dbPoolMax: number;
  shutdownTimeoutMs: number;
  tiers: Record<Tier, { quota: number | null; rps: number | null }>;
  sessions: { ttlSeconds: number; tokenTtlSeconds: number; refreshTokenTtlDays: number; publicPerIpPerHour: number; pollPerMinute: number };
  sanctions: {
    freshnessDays: number;
    walletSource: string | null;
    walletFormat: 'auto' | 'sdn_xml' | 'sdn_csv' | 'plain';
    nameSource: string | null;
    nameAltSource: string | null;
    refreshSeconds: number;
  };
  kyc: { provider: 'sandbox' | 'stripe'; stripeSecretKey: string | null; stripeWebhookSecret: string | null; stripeApiBase: string };
  reputation: { chainsFile: string | null; staleHours: number; rescoreIntervalSeconds: number };
  paymentHandler: { vendorId: string };
  demoAccount: boolean;
  /** /readyz answers 503 when Redis is unreachable (true) or 200 `degraded` so instances stay in rotation (false). */
  readinessRequiresRedis: boolean;
  /** HTTP worker processes (node:cluster), e.g. one per core; 1 = this process serves. */
  webConcurrency: number;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, detail: string) {
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
  DATABASE_URL: Joi.string().uri({ scheme: ['postgres', 'postgresql'] }).empty('').default(null),
  DATA_DIR: Joi.string().default('./data'),
  REDIS_URL: Joi.string().uri({ scheme: ['redis', 'rediss'] }).empty('').default(null),
  REDIS_PREFIX: Joi.string().pattern(/^[a-z0-9:_-]+$/i).default('kya:')
    .messages({ 'string.pattern.base': 'may contain only letters, digits, ":", "_" and "-"' }),
  PUBLIC_BASE_URL: Joi.string().uri({ scheme: ['http', 'https'] }).empty('').default(null),
  SIGNUP_URL: Joi.string().uri({ scheme: ['http', 'https'] }).default('https://kya.dev/signup'),
  SUPPORT_EMAIL: Joi.string().email({ tlds: false }).default('compliance@kya.dev'),
  SUPPORT_SUBJECT: Joi.string().default('Verification review'),
  TRUST_PROXY: Joi.alternatives(Joi.boolean(), Joi.number().integer().min(0), Joi.string()).default(false),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  BODY_LIMIT: Joi.string().pattern(/^\d+(b|kb|mb)$/i).default('100kb')
    .messages({ 'string.pattern.base': 'must be a size such as 100kb or 1mb' }),
  SERVER_SECRET: Joi.string().min(32).empty('').default(null),
  PII_ENCRYPTION_KEY: Joi.string().pattern(/^[0-9a-fA-F]{64}$/).empty('').default(null)
    .messages({ 'string.pattern.base': 'must be 64 hex characters (32 bytes)' }),
  DEPENDENCY_TIMEOUT_MS: positiveInt.max(30000).default(1500),
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
  SANCTIONS_FRESHNESS_DAYS: positiveInt.default(90),
  SANCTIONS_WALLET_SOURCE: optionalString,
  SANCTIONS_WALLET_FORMAT: Joi.string().valid('auto', 'sdn_xml', 'sdn_csv', 'plain').default('auto'),
  SANCTIONS_NAME_SOURCE: optionalString,
  SANCTIONS_NAME_ALT_SOURCE: optionalString,
  SANCTIONS_REFRESH_SECONDS: positiveInt.default(3600),
  KYC_PROVIDER: Joi.string().valid('sandbox', 'stripe').default('sandbox'),
  STRIPE_SECRET_KEY: optionalString,
  STRIPE_WEBHOOK_SECRET: optionalString,
  STRIPE_API_BASE: Joi.string().uri({ scheme: ['http', 'https'] }).default('https://api.stripe.com'),
  REPUTATION_CHAINS_FILE: optionalString,
  REPUTATION_STALE_HOURS: positiveInt.default(24),
  RESCORE_INTERVAL_SECONDS: positiveInt.default(3600),
  PAYMENT_HANDLER_VENDOR_ID: Joi.string()
    .pattern(/^[a-z](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9_])?)+$/)
    .default('com.kya.payment.mpp'),
  DEMO_ACCOUNT: Joi.boolean().truthy('1').falsy('0').default(true),
  READINESS_REQUIRES_REDIS: Joi.boolean().truthy('1').falsy('0').default(true),
  WEB_CONCURRENCY: Joi.number().integer().min(1).max(64).default(1),
})
  .when(Joi.object({ KYC_PROVIDER: Joi.valid('stripe').required() }).unknown(), {
    then: Joi.object({ STRIPE_SECRET_KEY: Joi.required(), STRIPE_WEBHOOK_SECRET: Joi.required() }),
  })
  .unknown(true);

/** Secrets the embedded mode generates once and keeps under DATA_DIR, so a demo needs no setup. */
function embeddedSecrets(dataDir: string): { serverSecret: string; piiKey: string } {
  const file = path.join(dataDir, 'secrets.json');
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.mkdirSync(dataDir, { recursive: true });
  const secrets = { serverSecret: crypto.randomBytes(32).toString('hex'), piiKey: crypto.randomBytes(32).toString('hex') };
  fs.writeFileSync(file, JSON.stringify(secrets), { mode: 0o600 });
  return secrets;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
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
  if (!serverSecret || !piiHex) {
    if (mode === 'external' && v.NODE_ENV === 'production') {
      throw new ConfigError(serverSecret ? 'PII_ENCRYPTION_KEY' : 'SERVER_SECRET', 'is required in production');
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
    serverSecret: serverSecret!,
    piiKey: Buffer.from(piiHex!, 'hex'),
    dependencyTimeoutMs: v.DEPENDENCY_TIMEOUT_MS,
    dbPoolMax: v.DB_POOL_MAX,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    tiers: {
      free: { quota: v.QUOTA_FREE, rps: v.RPS_FREE },
      paid: { quota: v.QUOTA_PAID, rps: v.RPS_PAID },
      enterprise: { quota: null, rps: null },
    },
    sessions: {
      ttlSeconds: v.SESSION_TTL_SECONDS,
      tokenTtlSeconds: v.TOKEN_TTL_SECONDS,
      refreshTokenTtlDays: v.REFRESH_TOKEN_TTL_DAYS,
      publicPerIpPerHour: v.PUBLIC_SESSIONS_PER_IP_PER_HOUR,
      pollPerMinute: v.POLL_PER_MINUTE,
    },
    sanctions: {
      freshnessDays: v.SANCTIONS_FRESHNESS_DAYS,
      walletSource: v.SANCTIONS_WALLET_SOURCE,
      walletFormat: v.SANCTIONS_WALLET_FORMAT,
      nameSource: v.SANCTIONS_NAME_SOURCE,
      nameAltSource: v.SANCTIONS_NAME_ALT_SOURCE,
      refreshSeconds: v.SANCTIONS_REFRESH_SECONDS,
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
    demoAccount: v.DEMO_ACCOUNT,
    readinessRequiresRedis: v.READINESS_REQUIRES_REDIS,
    webConcurrency: v.WEB_CONCURRENCY,
  };
  return deepFreeze(config);
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
