// Reputation background work on deps.jobs (BullMQ in production, in-process embedded): the `reputation.score`
// job (queued by assess for new addresses and refresh: true, by the indexer for addresses whose evidence
// changed, and by the periodic re-score), one repeatable indexer job per configured chain, and the re-score.
import type { JobQueue } from '../jobs/queue';
import type { Logger } from '../logger';
import type { ChainIndexer, SyncResult } from '../chain/indexer';
import type { ReputationChainRepository } from '../repositories/reputationChain';
import type { ReputationRepository } from '../repositories/reputation';
import type { ReputationScorer, ScoreJobData } from './scorer';

export const REPUTATION_SCORE_JOB = 'reputation.score';
export const REPUTATION_RESCORE_JOB = 'reputation.rescore';
export const indexJobName = (chain: string) => `reputation.index.${chain}`;

/** One queued score per address: assess, the indexer and the re-score all use this id, so they coalesce. */
export const scoreJobId = (network: string, address: string) => `${network}:${address}`;

export type { ScoreJobData };

export async function enqueueScore(jobs: JobQueue, data: ScoreJobData): Promise<void> {
  await jobs.add(REPUTATION_SCORE_JOB, data, { jobId: scoreJobId(data.network, data.address) });
}

const RESCORE_BATCH = 500;

export interface ReputationWorkerSettings {
  staleHours: number;
  rescoreIntervalSeconds: number;
}

export interface ReputationWorkersOptions {
  jobs: JobQueue;
  scorer: ReputationScorer;
  indexers: Map<string, ChainIndexer>;
  repo: ReputationRepository;
  chainRepo: ReputationChainRepository;
  settings: ReputationWorkerSettings;
  logger: Logger;
  now: () => Date;
}

export class ReputationWorkers {
  private readonly jobs: JobQueue;
  private readonly scorer: ReputationScorer;
  private readonly indexers: Map<string, ChainIndexer>;
  private readonly repo: ReputationRepository;
  private readonly chainRepo: ReputationChainRepository;
  private readonly settings: ReputationWorkerSettings;
  private readonly logger: Logger;
  private readonly now: () => Date;

  constructor(options: ReputationWorkersOptions) {
    this.jobs = options.jobs;
    this.scorer = options.scorer;
    this.indexers = options.indexers;
    this.repo = options.repo;
    this.chainRepo = options.chainRepo;
    this.settings = options.settings;
    this.logger = options.logger;
    this.now = options.now;
  }

  /** Registers the processors (every instance that runs workers). */
  register(): void {
    this.jobs.process<ScoreJobData>(
      REPUTATION_SCORE_JOB,
      async (data) => {
        await this.scorer.score(data);
      },
      { concurrency: 2 },
    );
    this.jobs.process(REPUTATION_RESCORE_JOB, async () => {
      await this.rescoreStale();
    });
    for (const [chain, indexer] of this.indexers) {
      this.jobs.process(indexJobName(chain), async () => {
        await this.afterSync(await indexer.sync());
      });
    }
  }

  /** Schedules the repeatable jobs (one schedule cluster-wide in BullMQ) and a first index run per chain. */
  async schedule(): Promise<void> {
    await this.jobs.repeat(REPUTATION_RESCORE_JOB, {}, this.settings.rescoreIntervalSeconds * 1000);
    for (const [chain, indexer] of this.indexers) {
      await this.jobs.repeat(indexJobName(chain), { chain }, indexer.chain.pollIntervalSeconds * 1000);
      await this.jobs.add(indexJobName(chain), { chain }, { jobId: `${chain}:start`, attempts: 1 });
    }
  }

  /** Queues scores for what an index run changed: agents' owners and wallets, and already-known payment parties. */
  async afterSync(result: SyncResult): Promise<number> {
    const fromAgents = await this.chainRepo.partiesOfAgents({ keys: result.touchedAgents });
    const knownParties = await this.repo.filterKnown({ network: 'evm', addresses: result.touchedParties });
    const addresses = [...new Set([...fromAgents, ...knownParties])];
    for (const address of addresses) await enqueueScore(this.jobs, { address, network: 'evm', chain: result.chain, reason: 'index' });
    return addresses.length;
  }

  /**
   * Re-scores profiles older than half the stale window (so a healthy system never shows `stale`) and known
   * addresses that were never scored (their job may have been lost). Chains out of sync are skipped by the
   * scorer itself, which is how an RPC outage turns into `stale` rather than a wrong score.
   */
  async rescoreStale(): Promise<number> {
    const before = new Date(this.now().getTime() - (this.settings.staleHours * 3600_000) / 2);
    const [stale, unscored] = await Promise.all([this.repo.staleSubjects({ before, limit: RESCORE_BATCH }), this.repo.unscoredKnown({ limit: RESCORE_BATCH })]);
    for (const s of stale) await enqueueScore(this.jobs, { address: s.address, network: s.network, chain: null, reason: 'stale' });
    for (const s of unscored) await enqueueScore(this.jobs, { address: s.address, network: s.network, chain: null, reason: 'unscored' });
    if (stale.length + unscored.length) this.logger.info({ stale: stale.length, unscored: unscored.length }, 'reputation re-score queued');
    return stale.length + unscored.length;
  }
}
