// The typed bag of collaborators, built once from Config. Infrastructure is chosen by mode: PostgreSQL +
// Redis (+ BullMQ) when configured, PGlite + in-process stores otherwise. Tests build it with overrides.
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from './config';
import { createDb, type Db } from './db/knex';
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
// [issue 5 credentials] imports
import { CredentialLifecycleService } from './services/credentials';
import { WalletCapturesRepository } from './repositories/walletCaptures';
import { WalletCaptureService } from './services/walletCapture';
// [issue 3 assess] imports
import { OperatorLookupRepository } from './repositories/operatorLookup';
import { AuditLog, AuditRepository } from './repositories/audit';
import { WalletListStore } from './sanctions/walletStore';
import { WalletSanctionsService } from './sanctions/walletSanctions';
import { AssessService } from './services/assess';
import { ReputationRepository } from './repositories/reputation';
import { ReputationChainRepository } from './repositories/reputationChain';
import { ReputationService } from './services/reputation';
import { loadChainsFile } from './chain/config';
import type { HttpFetcher } from './chain/safeFetch';

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
  repos: {
    accounts: AccountsRepository;
    apiKeys: ApiKeysRepository;
    usage: UsageRepository;
    credentials: CredentialsRepository;
    sessions: SessionsRepository;
    // [issue 3 assess] repositories
    operatorLookup: OperatorLookupRepository;
    audit: AuditRepository;
    walletLists: WalletListStore;
    // [issue 4 sessions] repositories
    refreshTokens: RefreshTokensRepository;
    operators: OperatorsRepository;
    walletChallenges: WalletChallengesRepository;
    kycEvents: KycEventsRepository;
    // [issue 5 credentials] repositories
    walletCaptures: WalletCapturesRepository;
    // [issue 7 reputation] repositories
    reputation: ReputationRepository;
    reputationChain: ReputationChainRepository;
  };
  services: {
    accounts: AccountsService;
    quota: QuotaService;
    credentials: CredentialsService;
    sessions: SessionsService;
    // [issue 3 assess] services
    assess: AssessService;
    walletSanctions: WalletSanctionsService;
    auditLog: AuditLog;
    // [issue 4 sessions] services
    refreshTokens: RefreshTokensService;
    verification: VerificationService;
    screening: ScreeningService;
    kyc: KycProvider;
    // [issue 5 credentials] services
    credentialLifecycle: CredentialLifecycleService;
    walletCapture: WalletCaptureService;
    // [issue 7 reputation] services
    reputation: ReputationService;
  };
}

export interface DepsOverrides {
  logger?: Logger;
  clock?: Clock;
  /** false for API-only instances whose jobs run in a separate worker process. */
  runWorkers?: boolean;
  /** Prefix for Redis keys and queues (tests isolate themselves with it). */
  redisPrefix?: string;
  /** [issue 7 reputation] outbound fetcher for agent registration files and websites (tests inject a fake). */
  reputationFetcher?: HttpFetcher;
}

export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const logger = overrides.logger ?? createLogger(config.logLevel);
  const clock = overrides.clock ?? systemClock;
  const prefix = overrides.redisPrefix ?? config.redisPrefix;
  const lifecycle = new Lifecycle();

  const db = createDb(config, { logger, onConnectionError: (err) => logger.warn({ err: err.message }, 'database connection error') });
  lifecycle.onStop('database', () => db.destroy());

  let redis: Redis | null = null;
  let kv: KeyValueStore;
  let pubsub: PubSub;
  let jobs: JobQueue;
  if (config.redisUrl) {
    redis = createRedis(config.redisUrl, config.dependencyTimeoutMs, logger, 'main');
    const subscriber = createRedis(config.redisUrl, config.dependencyTimeoutMs, logger, 'subscriber', true);
    await Promise.all([redis, subscriber].map((c) =>
      connectRedis(c, config.dependencyTimeoutMs * 2).catch((err) => logger.warn({ err: err.message }, 'redis not reachable at start; will keep retrying')),
    ));
    kv = new RedisKeyValueStore(redis, prefix);
    pubsub = new RedisPubSub(redis, subscriber, prefix);
    jobs = new BullJobQueue(config.redisUrl, prefix, logger, overrides.runWorkers ?? true, config.dependencyTimeoutMs);
    const clients = [redis, subscriber];
    lifecycle.onStop('redis', async () => {
      await Promise.all(clients.map((c) => closeRedis(c)));
    });
  } else {
    kv = new MemoryKeyValueStore();
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
    credentials: new CredentialsRepository(db),
    sessions: new SessionsRepository(db),
    // [issue 3 assess] repositories
    operatorLookup: new OperatorLookupRepository(db),
    audit: new AuditRepository(db),
    walletLists: new WalletListStore(db),
    // [issue 4 sessions] repositories
    refreshTokens: new RefreshTokensRepository(db),
    operators: new OperatorsRepository(db),
    walletChallenges: new WalletChallengesRepository(db),
    kycEvents: new KycEventsRepository(db),
    // [issue 5 credentials] repositories
    walletCaptures: new WalletCapturesRepository(db),
    // [issue 7 reputation] repositories
    reputation: new ReputationRepository(db),
    reputationChain: new ReputationChainRepository(db),
  };
  const accounts = new AccountsService(db, repos.accounts, repos.apiKeys, pubsub, config, logger);
  const quota = new QuotaService(kv, repos.usage, logger, () => clock.now());
  lifecycle.onStart('accounts', () => accounts.start());
  lifecycle.onStart('quota', () => quota.start());
  lifecycle.onStop('quota', () => quota.stop());

  const now = () => clock.now();
  const credentials = new CredentialsService(db, repos.credentials, logger, now);
  lifecycle.onStart('credentials', () => credentials.start());
  lifecycle.onStop('credentials', () => credentials.stop());
  // [issue 4 sessions] services
  const refreshTokens = new RefreshTokensService(db, repos.refreshTokens, repos.operators, credentials, config, logger, now);
  const sessions = new SessionsService(db, repos.sessions, config, now, { credentials, refreshTokens });
  const screening = new ScreeningService(config, logger, now, repos.operators);
  lifecycle.onStart('screening', () => screening.start());
  lifecycle.onStop('screening', () => screening.stop());
  const verification = new VerificationService(db, repos.sessions, repos.operators, repos.walletChallenges, repos.kycEvents, screening, config, logger, now);
  const kyc = createKycProvider(config);
  // [issue 5 credentials] services
  const credentialLifecycle = new CredentialLifecycleService(credentials, repos.accounts, sessions, config, now);
  const walletCapture = new WalletCaptureService(credentials, credentialLifecycle, repos.walletCaptures, now);
  // [issue 3 assess] services
  const walletSanctions = new WalletSanctionsService(repos.walletLists, pubsub, logger, now, {
    source: config.sanctions.walletSource,
    format: config.sanctions.walletFormat,
    refreshSeconds: config.sanctions.refreshSeconds,
  });
  lifecycle.onStart('walletSanctions', () => walletSanctions.start());
  lifecycle.onStop('walletSanctions', () => walletSanctions.stop());
  const auditLog = new AuditLog(repos.audit, logger);
  lifecycle.onStart('auditLog', () => auditLog.start());
  lifecycle.onStop('auditLog', () => auditLog.stop());
  const assess = new AssessService({
    config, logger, now, lookup: repos.operatorLookup, sanctions: walletSanctions, sessions, credentialLifecycle, jobs, audit: auditLog, credentials: repos.credentials,
  });
  lifecycle.onStart('assess', () => assess.start());
  lifecycle.onStop('assess', () => assess.stop());
  // [issue 7 reputation] services
  const reputation = new ReputationService({
    db, config, chains: loadChainsFile(config.reputation.chainsFile), repo: repos.reputation, chainRepo: repos.reputationChain,
    jobs, logger, now, fetcher: overrides.reputationFetcher,
  });
  lifecycle.onStart('reputation', () => reputation.start(overrides.runWorkers ?? true));
  lifecycle.onStop('reputation', () => reputation.stop());

  const limiters = limiterFactory(redis, prefix, logger);
  const meter = createMeter(limiters, quota);

  const services = {
    accounts,
    quota,
    credentials,
    sessions,
    // [issue 3 assess] services
    assess,
    walletSanctions,
    auditLog,
    // [issue 4 sessions] services
    refreshTokens,
    verification,
    screening,
    kyc,
    // [issue 5 credentials] services
    credentialLifecycle,
    walletCapture,
    // [issue 7 reputation] services
    reputation,
  };
  return { config, logger, clock, db, redis, kv, pubsub, jobs, metrics, limiters, meter, lifecycle, repos, services };
}
