// The typed bag of collaborators, built once from Config. Infrastructure is chosen by mode: PostgreSQL +
// Redis (+ BullMQ) when configured, PGlite + in-process stores otherwise. Tests build it with overrides.
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from './config';
import { createDb, guardWithCircuit, postgresCircuit, type Db } from './db/knex';
import { CircuitBreaker, isInfrastructureError } from './circuit';
import { MemoryQuotaCounters, RedisQuotaCounters, type QuotaCounters } from './stores/quotaCounters';
import { MeteredRecordsRepository } from './repositories/meteredRecords';
import { MeteredRecorder } from './services/meteredRecords';
import { WriteBehind } from './db/writeBehind';
import { createLogger, type Logger } from './logger';
import { createRedis, connectRedis, closeRedis, type Redis } from './stores/redis';
import { MemoryKeyValueStore, MemoryPubSub, RedisKeyValueStore, RedisPubSub, type KeyValueStore, type PubSub } from './stores/kv';
import { BullJobQueue, InProcessJobQueue, type JobQueue } from './jobs/queue';
import { limiterFactory, type LimiterFactory } from './http/rateLimit';
import { createMeter, type Meter } from './http/meter';
import { AccountsRepository } from './repositories/accounts';
import { ApiKeysRepository } from './repositories/apiKeys';
import { UsageRepository } from './repositories/usage';
import { AccountsService } from './services/accounts';
import { IdentityCache } from './services/identity';
import { QuotaService } from './services/quota';
import { CredentialsRepository } from './repositories/credentials';
import { SessionsRepository } from './repositories/sessions';
import { CredentialsService } from './services/credentials';
import { SessionsService } from './services/sessions';
import { RefreshTokensRepository } from './repositories/refreshTokens';
import { OperatorsRepository } from './repositories/operators';
import { WalletChallengesRepository } from './repositories/walletChallenges';
import { KycEventsRepository } from './repositories/kycEvents';
import { RefreshTokensService } from './services/refreshTokens';
import { VerificationService } from './services/verification';
import { ScreeningService } from './screening/service';
import { createKycProvider, type KycProvider } from './kyc';
import { CredentialLifecycleService } from './services/credentials';
import { WalletCapturesRepository } from './repositories/walletCaptures';
import { WalletCaptureService } from './services/walletCapture';
import { OperatorLookupRepository } from './repositories/operatorLookup';
import { AuditLog, AuditRepository } from './repositories/audit';
import { SanctionsWalletListsRepository } from './repositories/sanctionsWalletLists';
import { SanctionsNameListsRepository } from './repositories/sanctionsNameLists';
import { WalletSanctionsService } from './sanctions/walletSanctions';
import { registerSanctionsMetrics } from './sanctions/metrics';
import { AssessService } from './services/assess';
import { WalletProofService } from './services/walletProof';
import { ReputationRepository } from './repositories/reputation';
import { ReputationChainRepository } from './repositories/reputationChain';
import { ReputationService } from './services/reputation';
import { loadChainsFile } from './chain/config';
import type { HttpFetcher } from './chain/safeFetch';
import { WebhooksRepository } from './repositories/webhooks';
import { WebhookService } from './webhooks/service';
import { DashboardRepository } from './repositories/dashboard';
import { DashboardService } from './dashboard/service';
import { ReadinessService } from './services/readiness';

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

/** Start/stop hooks: started in order, stopped in reverse (workers before pools). */
export class Lifecycle {
  private readonly starters: Array<{ name: string; fn: () => Promise<void> | void }> = [];
  private readonly stoppers: Array<{ name: string; fn: () => Promise<void> | void }> = [];
  onStart(name: string, fn: () => Promise<void> | void) {
    this.starters.push({ name, fn });
  }
  onStop(name: string, fn: () => Promise<void> | void) {
    this.stoppers.push({ name, fn });
  }
  async start() {
    for (const s of this.starters) await s.fn();
  }
  async stop(logger?: Logger) {
    for (const s of [...this.stoppers].reverse()) {
      try {
        await s.fn();
      } catch (err) {
        logger?.warn({ err: (err as Error).message, part: s.name }, 'error while stopping');
      }
    }
  }
}

export interface Deps {
  config: Config;
  logger: Logger;
  clock: Clock;
  db: Db;
  redis: Redis | null;
  kv: KeyValueStore;
  pubsub: PubSub;
  jobs: JobQueue;
  metrics: Registry;
  limiters: LimiterFactory;
  meter: Meter;
  lifecycle: Lifecycle;
  /** One per external dependency; null in embedded mode (in-process stores cannot hang). */
  circuits: { postgres: CircuitBreaker | null; redis: CircuitBreaker | null };
  repos: {
    accounts: AccountsRepository;
    apiKeys: ApiKeysRepository;
    usage: UsageRepository;
    meteredRecords: MeteredRecordsRepository;
    credentials: CredentialsRepository;
    sessions: SessionsRepository;
    // assess
    operatorLookup: OperatorLookupRepository;
    audit: AuditRepository;
    walletLists: SanctionsWalletListsRepository;
    nameLists: SanctionsNameListsRepository;
    // sessions
    refreshTokens: RefreshTokensRepository;
    operators: OperatorsRepository;
    walletChallenges: WalletChallengesRepository;
    kycEvents: KycEventsRepository;
    // credentials
    walletCaptures: WalletCapturesRepository;
    // reputation
    reputation: ReputationRepository;
    reputationChain: ReputationChainRepository;
    webhooks: WebhooksRepository;
    dashboard: DashboardRepository;
  };
  services: {
    accounts: AccountsService;
    /** In-process identity state; `identity.changed` is what every state-changing path calls after commit. */
    identity: IdentityCache;
    quota: QuotaService;
    meteredRecords: MeteredRecorder;
    credentials: CredentialsService;
    sessions: SessionsService;
    // assess
    assess: AssessService;
    walletSanctions: WalletSanctionsService;
    auditLog: AuditLog;
    // sessions
    refreshTokens: RefreshTokensService;
    verification: VerificationService;
    screening: ScreeningService;
    kyc: KycProvider;
    // credentials
    credentialLifecycle: CredentialLifecycleService;
    walletCapture: WalletCaptureService;
    // reputation
    reputation: ReputationService;
    webhooks: WebhookService;
    dashboard: DashboardService;
    readiness: ReadinessService;
  };
}

export interface DepsOverrides {
  logger?: Logger;
  clock?: Clock;
  /** false for API-only instances whose jobs run in a separate worker process. */
  runWorkers?: boolean;
  /** false: sanctions lists are not loaded at start (the admin CLI; its sanctions commands load on demand). */
  loadSanctionsLists?: boolean;
  /** Prefix for Redis keys and queues (tests isolate themselves with it). */
  redisPrefix?: string;
  /** Reputation: outbound fetcher for agent registration files and websites (tests inject a fake). */
  reputationFetcher?: HttpFetcher;
  /** Outbound fetcher for webhook deliveries (default: the safe fetcher, private addresses refused in production). */
  webhookFetcher?: HttpFetcher;
}

/** Statement bound of the bulk pool (storing or reading a whole sanctions list). */
const BULK_TIMEOUT_MS = 30_000;
/** Connection bound of the bulk pool: its work runs beside CPU-heavy list parsing, which can delay a handshake. */
const BULK_CONNECT_TIMEOUT_MS = 10_000;

export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const clock = overrides.clock ?? systemClock;
  const prefix = overrides.redisPrefix ?? config.redisPrefix;
  const lifecycle = new Lifecycle();

  const onConnectionError = (err: Error) => logger.warn({ err: err.message }, 'database connection error');
  const db = createDb(config, { logger, onConnectionError });
  lifecycle.onStop('database', () => db.destroy());
  // The sanctions lists (megabytes of JSON, stored, read and checked by background refreshes) get their own small
  // pool with generous bounds instead of the request path's DEPENDENCY_TIMEOUT_MS. Embedded: the one PGlite.
  let bulkDb = db;
  if (config.databaseUrl) {
    const bulk = createDb(config, { logger, onConnectionError, timeoutMs: BULK_TIMEOUT_MS, connectTimeoutMs: BULK_CONNECT_TIMEOUT_MS, poolMax: 2 });
    lifecycle.onStop('database (bulk)', () => bulk.destroy());
    bulkDb = bulk;
  }
  const circuits: Deps['circuits'] = { postgres: null, redis: null };
  if (config.databaseUrl) {
    circuits.postgres = postgresCircuit(config, logger);
    guardWithCircuit(db, circuits.postgres);
    const pgCircuit = circuits.postgres;
    lifecycle.onStop('postgres circuit', () => pgCircuit.stop());
  }

  let redis: Redis | null = null;
  let kv: KeyValueStore;
  let pubsub: PubSub;
  let jobs: JobQueue;
  let counters: QuotaCounters;
  if (config.redisUrl) {
    redis = createRedis(config.redisUrl, config.dependencyTimeoutMs, logger, 'main');
    const subscriber = createRedis(config.redisUrl, config.dependencyTimeoutMs, logger, 'subscriber', true);
    await Promise.all(
      [redis, subscriber].map((c) =>
        connectRedis(c, config.dependencyTimeoutMs * 2).catch((err: Error) =>
          logger.warn({ err: err.message }, 'redis not reachable at start; will keep retrying'),
        ),
      ),
    );
    const client = redis;
    circuits.redis = new CircuitBreaker({
      name: 'redis',
      trips: isInfrastructureError,
      callTimeoutMs: config.dependencyTimeoutMs,
      probeIntervalMs: 100,
      probeTimeoutMs: Math.min(config.dependencyTimeoutMs, 500),
      logger,
      probe: () => client.ping(),
    });
    const redisCircuit = circuits.redis;
    lifecycle.onStop('redis circuit', () => redisCircuit.stop());
    kv = new RedisKeyValueStore(redis, prefix, circuits.redis);
    counters = new RedisQuotaCounters(redis, prefix, circuits.redis);
    pubsub = new RedisPubSub(redis, subscriber, prefix, circuits.redis);
    jobs = new BullJobQueue(config.redisUrl, prefix, logger, overrides.runWorkers ?? true, config.dependencyTimeoutMs);
    const clients = [redis, subscriber];
    lifecycle.onStop('redis', async () => {
      await Promise.all(clients.map((c) => closeRedis(c)));
    });
  } else {
    kv = new MemoryKeyValueStore();
    counters = new MemoryQuotaCounters();
    pubsub = new MemoryPubSub();
    jobs = new InProcessJobQueue(logger);
  }
  lifecycle.onStop('pubsub', () => pubsub.close());
  lifecycle.onStop('jobs', () => jobs.close());

  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics });

  const repos = {
    accounts: new AccountsRepository(db),
    apiKeys: new ApiKeysRepository(db),
    usage: new UsageRepository(db),
    meteredRecords: new MeteredRecordsRepository(db, { synchronousCommit: config.meteredSynchronousCommit }),
    credentials: new CredentialsRepository(db),
    sessions: new SessionsRepository(db),
    // assess
    operatorLookup: new OperatorLookupRepository(db),
    audit: new AuditRepository(db),
    walletLists: new SanctionsWalletListsRepository(db, bulkDb),
    nameLists: new SanctionsNameListsRepository(db, bulkDb),
    // sessions
    refreshTokens: new RefreshTokensRepository(db),
    operators: new OperatorsRepository(db),
    walletChallenges: new WalletChallengesRepository(db),
    kycEvents: new KycEventsRepository(db),
    // credentials
    walletCaptures: new WalletCapturesRepository(db),
    // reputation
    reputation: new ReputationRepository(db),
    reputationChain: new ReputationChainRepository(db),
    webhooks: new WebhooksRepository(db),
    dashboard: new DashboardRepository(db),
  };
  // Hot identity state: every state-changing service gets identity.changed and calls it after commit.
  const identity = new IdentityCache({ repo: repos.operatorLookup, pubsub, logger, ...config.identityCache, nowMs: () => clock.now().getTime() });
  lifecycle.onStart('identity', () => identity.start());
  const identityChanged = identity.changed;
  const now = () => clock.now();
  const keyUses = new WriteBehind<string, Date>({
    what: 'api key last_used_at update',
    intervalMs: 1000,
    logger,
    write: (batch) => repos.apiKeys.touch({ uses: [...batch].map(([id, at]) => ({ id, at })) }),
  });
  lifecycle.onStart('keyUses', () => keyUses.start());
  // Stopped after the HTTP server (lifecycle stops in reverse): the last requests' uses are written.
  lifecycle.onStop('keyUses', () => keyUses.stop());
  const accounts = new AccountsService({ db, accounts: repos.accounts, keys: repos.apiKeys, identity, config, now, keyUses });
  const meteredRecords = new MeteredRecorder(repos.meteredRecords, { windowMs: config.groupCommitMs });
  // Stopped after the HTTP server (lifecycle stops in reverse): whatever was submitted is committed first.
  lifecycle.onStop('meteredRecords', () => meteredRecords.drain());
  const quota = new QuotaService({ counters, usage: repos.usage, recorder: meteredRecords, logger, now });

  const webhooks = new WebhookService({ db, repo: repos.webhooks, jobs, config, logger, now, fetcher: overrides.webhookFetcher });
  const credentialTouches = new WriteBehind<string, Date>({
    what: 'last_used_at update',
    intervalMs: 1000,
    logger,
    write: (batch) => repos.credentials.touch({ uses: [...batch].map(([id, at]) => ({ id, at })) }),
  });
  lifecycle.onStart('credentialTouches', () => credentialTouches.start());
  lifecycle.onStop('credentialTouches', () => credentialTouches.stop());
  const credentials = new CredentialsService({ db, credentials: repos.credentials, logger, now, identityChanged, webhooks, touches: credentialTouches });
  // sessions
  const refreshTokens = new RefreshTokensService({
    db,
    tokens: repos.refreshTokens,
    operators: repos.operators,
    credentials,
    config,
    logger,
    now,
    identityChanged,
  });
  const sessions = new SessionsService({ db, sessions: repos.sessions, config, now, delivery: { credentials, refreshTokens, webhooks } });
  const runWorkers = overrides.runWorkers ?? true;
  const screening = new ScreeningService({
    config,
    logger,
    now,
    operators: repos.operators,
    store: repos.nameLists,
    jobs,
    pubsub,
    identityChanged,
    queueRescreens: runWorkers || Boolean(config.redisUrl),
  });
  screening.useEvents({ db, webhooks, concerned: (id, trx) => repos.webhooks.accountsConcerningOperator({ operatorAccountId: id }, trx) });
  const loadLists = overrides.loadSanctionsLists ?? true;
  lifecycle.onStart('screening', () => (loadLists ? screening.start(runWorkers) : undefined));
  lifecycle.onStop('screening', () => screening.stop());
  const verification = new VerificationService({
    db,
    sessions: repos.sessions,
    operators: repos.operators,
    challenges: repos.walletChallenges,
    kycEvents: repos.kycEvents,
    screening,
    config,
    logger,
    now,
    identityChanged,
    webhooks,
  });
  const kyc = createKycProvider(config);
  // credentials
  const credentialLifecycle = new CredentialLifecycleService({ credentials, accounts: repos.accounts, sessions, config, now });
  const walletCapture = new WalletCaptureService({ credentials, lifecycle: credentialLifecycle, captures: repos.walletCaptures, now, identityChanged });
  // assess
  const walletSanctions = new WalletSanctionsService({
    store: repos.walletLists,
    pubsub,
    logger,
    now,
    source: config.sanctions.walletSource,
    format: config.sanctions.walletFormat,
    refreshSeconds: config.sanctions.refreshSeconds,
    seedBundled: config.sanctions.walletSeedBundled,
    maxAgeHours: config.sanctions.maxAgeHours,
  });
  lifecycle.onStart('walletSanctions', () => (loadLists ? walletSanctions.start() : undefined));
  lifecycle.onStop('walletSanctions', () => walletSanctions.stop());
  const auditLog = new AuditLog(meteredRecords);
  const assess = new AssessService({
    config,
    logger,
    now,
    lookup: identity,
    sanctions: walletSanctions,
    sessions,
    credentialLifecycle,
    jobs,
    audit: auditLog,
    credentials,
    walletProofs: new WalletProofService({ kv, now }),
  });
  // reputation
  const reputation = new ReputationService({
    db,
    config,
    chains: loadChainsFile(config.reputation.chainsFile),
    repo: repos.reputation,
    chainRepo: repos.reputationChain,
    jobs,
    logger,
    now,
    fetcher: overrides.reputationFetcher,
  });
  lifecycle.onStart('reputation', () => reputation.start(overrides.runWorkers ?? true));
  lifecycle.onStop('reputation', () => reputation.stop());

  registerSanctionsMetrics(metrics, () => [walletSanctions.freshness(), screening.freshness()]);
  webhooks.expireSessions = () => sessions.expireOverdue();
  lifecycle.onStart('webhooks', () => webhooks.start(overrides.runWorkers ?? true));

  const limiters = limiterFactory(redis, prefix, circuits.redis);
  const meter = createMeter(limiters, quota, meteredRecords);

  const redisClient = redis;
  const redisCircuit = circuits.redis;
  const readiness = new ReadinessService({
    timeoutMs: config.dependencyTimeoutMs,
    requiresRedis: config.readinessRequiresRedis,
    pingDatabase: () => db.raw('select 1'),
    pingRedis: redisClient ? () => (redisCircuit ? redisCircuit.run(() => redisClient.ping()) : redisClient.ping()) : null,
    sanctionsLists: () => [walletSanctions.freshness(), screening.freshness()],
  });

  const services = {
    accounts,
    identity,
    quota,
    meteredRecords,
    credentials,
    sessions,
    // assess
    assess,
    walletSanctions,
    auditLog,
    // sessions
    refreshTokens,
    verification,
    screening,
    kyc,
    // credentials
    credentialLifecycle,
    walletCapture,
    // reputation
    reputation,
    webhooks,
    dashboard: new DashboardService({ repo: repos.dashboard, accounts, usage: repos.usage, kv, config, now }),
    readiness,
  };
  return { config, logger, clock, db, redis, kv, pubsub, jobs, metrics, limiters, meter, lifecycle, circuits, repos, services };
}
