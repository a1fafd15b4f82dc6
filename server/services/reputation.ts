// Reputation: the read-only profile behind GET /v1/reputation/{address} (cached scores only; reading never
// scores), and the composition of the indexer, scorer and workers behind it. Paid and Enterprise callers get
// the full profile; Free callers get score, grade and entity type only.
import type { Knex } from 'knex';
import { ApiError } from '../../shared/errors';
import type { ParsedAddress } from '../../shared/address';
import type { Chain } from '../../shared/chains';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { JobQueue } from '../jobs/queue';
import type { ChainConfig } from '../chain/config';
import { ChainIndexer, createChainProvider, type ChainProvider } from '../chain/indexer';
import { RegistrationResolver } from '../chain/registration';
import { EvidenceCollector } from '../chain/evidence';
import { SafeHttpFetcher, type HttpFetcher } from '../chain/safeFetch';
import { ReputationScorer } from '../reputation/scorer';
import { ReputationWorkers } from '../reputation/jobs';
import { LOW_EVIDENCE_CONFIDENCE, SCORE_VERSION } from '../reputation/formulas';
import type { ChainScoreRow, ReputationRepository, SubjectRow } from '../repositories/reputation';
import type { ReputationChainRepository, SyncStateRow } from '../repositories/reputationChain';
import { REPUTATION_FIELDS } from '../../shared/reputationFields';

export const DATA_SEMANTICS = 'candidate_payment_activity_with_verified_subset';

export type ScoreStatus = 'scored' | 'stale' | 'known_unscored';

export interface ReputationDeps {
  db: Knex;
  config: Config;
  chains: ChainConfig[];
  repo: ReputationRepository;
  chainRepo: ReputationChainRepository;
  jobs: JobQueue;
  logger: Logger;
  now: () => Date;
  /** Outbound fetcher for registration files and websites (default: SafeHttpFetcher). */
  fetcher?: HttpFetcher;
  /** JSON-RPC provider per chain (default: ethers JsonRpcProvider on the configured URL). */
  providerFor?: (chain: ChainConfig) => ChainProvider;
}

/** The documented fields of a jsonb object, in the documented order (jsonb does not keep key order). */
function pick(source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = source[k] ?? null;
  return out;
}

const CAVEAT_SEMANTICS =
  'Payment activity is candidate x402 activity: USDC transfers carrying an EIP-3009 authorization. Verified figures are the subset this service observed itself (merchant wallet captures).';
// Said to every tier: a score near the prior for lack of evidence must not read as a verdict on the wallet.
const CAVEAT_LOW_EVIDENCE =
  'Little evidence about this address so far: the score stays near the neutral starting point (50, grade C, higher for a verified operator) and means "not enough evidence yet", not "risky". Confidence grows as payments, agents and feedback accrue.';
const CAVEAT_VERIFIED_SCOPE =
  'Verified payer activity comes from wallet captures, which are per network (evm/solana), not per chain; it is repeated in each chain entry.';

export class ReputationService {
  readonly indexers = new Map<string, ChainIndexer>();
  readonly scorer: ReputationScorer;
  readonly workers: ReputationWorkers;
  private readonly chains: Map<string, ChainConfig>;
  private readonly providers: Array<{ destroy?: () => void }> = [];

  constructor(private readonly d: ReputationDeps) {
    this.chains = new Map(d.chains.map((c) => [c.name, c]));
    const fetcher = d.fetcher ?? new SafeHttpFetcher();
    const resolver = new RegistrationResolver(fetcher);
    const evidence = new EvidenceCollector(fetcher);
    for (const chain of d.chains) {
      const provider = d.providerFor ? d.providerFor(chain) : createChainProvider(chain);
      this.providers.push(provider as { destroy?: () => void });
      this.indexers.set(
        chain.name,
        new ChainIndexer({ db: d.db, repo: d.chainRepo, chain, provider, resolver, evidence, logger: d.logger.child({ chain: chain.name }), now: d.now }),
      );
    }
    this.scorer = new ReputationScorer({ db: d.db, repo: d.repo, chainRepo: d.chainRepo, chains: d.chains, logger: d.logger, now: d.now });
    this.workers = new ReputationWorkers({
      jobs: d.jobs,
      scorer: this.scorer,
      indexers: this.indexers,
      repo: d.repo,
      chainRepo: d.chainRepo,
      settings: d.config.reputation,
      logger: d.logger,
      now: d.now,
    });
  }

  /**
   * Instances that run workers register the processors and the repeatable schedules (BullMQ keeps one schedule
   * cluster-wide). API-only instances and the admin CLI do neither: a job scheduled where nothing processes
   * it would only wait in the in-process queue.
   */
  async start(runWorkers: boolean): Promise<void> {
    if (!runWorkers) return;
    this.workers.register();
    await this.workers.schedule();
  }

  stop(): void {
    for (const p of this.providers) p.destroy?.();
  }

  statusOf(scoredAt: Date | null, now: Date): ScoreStatus {
    if (!scoredAt) return 'known_unscored';
    return now.getTime() - new Date(scoredAt).getTime() > this.d.config.reputation.staleHours * 3600_000 ? 'stale' : 'scored';
  }

  /** The cached profile; 404 unknown_address when the address was never seen. Never scores. */
  async profile(subject: ParsedAddress, options: { chain: Chain | null; full: boolean }): Promise<Record<string, unknown>> {
    const { network, address } = subject;
    const now = this.d.now();
    const [row, chainRows, level, states] = await Promise.all([
      this.d.repo.getSubject({ network, address }),
      this.d.repo.chainScores({ network, address }),
      this.d.repo.verificationLevel({ network, address }),
      this.d.chainRepo.syncStates(),
    ]);
    if (!row || !row.scored_at || chainRows.length === 0) return this.unscored(subject, options, level, row);

    const status = this.statusOf(row.scored_at, now);
    const caveats = [CAVEAT_SEMANTICS, ...this.indexCaveats(row.chains, states, now), ...row.caveats];
    if (status === 'stale')
      caveats.push(`Score is stale: last computed ${new Date(row.scored_at).toISOString()}, more than ${this.d.config.reputation.staleHours} hours ago.`);
    if (chainRows.some((c) => (c.activity as { as_verified_payer?: number }).as_verified_payer)) caveats.push(CAVEAT_VERIFIED_SCOPE);
    if (Math.max(...chainRows.map((c) => Number(c.confidence))) < LOW_EVIDENCE_CONFIDENCE) caveats.push(CAVEAT_LOW_EVIDENCE);

    const visible = chainRows.filter((c) => !options.chain || c.chain === options.chain);
    const agents = row.agents.filter((a) => !options.chain || a.chain === options.chain);
    const score = { value: row.score, grade: row.grade, scored_at: new Date(row.scored_at).toISOString(), status, version: row.version };
    const body: Record<string, unknown> = { subject: { address, chains: row.chains }, score };
    if (options.full) {
      body.verification_level = level;
      body.chains = visible.map((c) => this.fullChain(c, now));
      if (row.operator_score) body.operator_score = pick(row.operator_score, REPUTATION_FIELDS.operatorScore);
      if (row.reputation) body.reputation = pick(row.reputation, REPUTATION_FIELDS.reputation);
      body.agents = agents.map((a) => ({ token_id: a.token_id, chain: a.chain, name: a.name, score: a.score, grade: a.grade }));
    } else {
      body.chains = visible.map((c) => ({ chain: c.chain, score: this.chainScore(c, now), classification: { entity_type: c.classification.entity_type } }));
      if (row.operator_score) body.operator_score = { score: row.operator_score.score, grade: row.operator_score.grade };
      body.agents = agents.map((a) => ({ token_id: a.token_id, chain: a.chain, score: a.score, grade: a.grade }));
    }
    body.data_semantics = DATA_SEMANTICS;
    body.caveats = caveats;
    body.updated_at = new Date(row.updated_at).toISOString();
    return body;
  }

  private chainScore(c: ChainScoreRow, now: Date) {
    return { value: c.score, grade: c.grade, scored_at: new Date(c.scored_at).toISOString(), status: this.statusOf(c.scored_at, now), version: c.version };
  }

  private fullChain(c: ChainScoreRow, now: Date) {
    const k = c.classification;
    return {
      chain: c.chain,
      score: { ...this.chainScore(c, now), confidence: c.confidence, dimensions: pick(c.dimensions, REPUTATION_FIELDS.dimensions) },
      classification: {
        entity_type: k.entity_type,
        confidence: k.confidence,
        is_known: k.is_known,
        is_known_erc8004_agent: k.is_known_erc8004_agent,
        has_candidate_payment_activity: k.has_candidate_payment_activity,
        has_verified_payment_activity: k.has_verified_payment_activity,
        reasons: k.reasons,
      },
      identity: pick(c.identity, REPUTATION_FIELDS.identity),
      activity: pick(c.activity, REPUTATION_FIELDS.activity),
      evidence_summary: pick(c.evidence, REPUTATION_FIELDS.evidence),
    };
  }

  /** Seen (by assess, a wallet claim or capture, or the chain index) but never scored; else 404. */
  private async unscored(subject: ParsedAddress, options: { chain: Chain | null; full: boolean }, level: string, row: SubjectRow | null) {
    const { network, address } = subject;
    const [known, linked, evidenceChains] = await Promise.all([
      this.d.repo.knownAddress({ network, address }),
      this.d.repo.isLinkedWallet({ network, address }),
      network === 'evm' ? this.d.chainRepo.chainsWithEvidence({ address }) : Promise.resolve([] as string[]),
    ]);
    if (!row && !known && !linked && evidenceChains.length === 0) {
      throw new ApiError('unknown_address', 'This address has not been indexed yet. Call POST /v1/assess with it to queue scoring.', {
        extra: { can_assess: true },
      });
    }
    const body: Record<string, unknown> = {
      subject: { address, chains: evidenceChains },
      score: { value: null, grade: null, scored_at: null, status: 'known_unscored', version: SCORE_VERSION },
    };
    if (options.full) body.verification_level = level;
    body.chains = [];
    body.agents = [];
    body.data_semantics = DATA_SEMANTICS;
    body.caveats = [CAVEAT_SEMANTICS, 'This address is known but has not been scored yet; scoring is queued by POST /v1/assess and runs in the background.'];
    body.updated_at = new Date(row?.updated_at ?? known?.first_seen_at ?? this.d.now()).toISOString();
    return body;
  }

  /** Caveats for chains whose index is behind or unavailable, and for chains this server does not index. */
  private indexCaveats(chains: string[], states: SyncStateRow[], now: Date): string[] {
    const out: string[] = [];
    for (const chain of chains) {
      const config = this.chains.get(chain);
      if (!config) {
        out.push(
          chain === 'solana'
            ? 'Solana on-chain activity is not indexed; the solana entry reflects off-chain evidence only.'
            : `${chain} is not indexed by this server; its entry reflects off-chain evidence only.`,
        );
        continue;
      }
      const state = states.find((s) => s.chain === chain);
      const synced = state?.last_synced_at ? new Date(state.last_synced_at) : null;
      if (!synced || now.getTime() - synced.getTime() > config.maxIndexLagSeconds * 1000) {
        const since = synced ? `last synced ${synced.toISOString()}` : 'never synced';
        const why = state?.last_error ? ' (chain RPC unavailable)' : '';
        out.push(`Chain index for ${chain} is behind${why}, ${since}; ${chain} scores are not refreshed until it catches up.`);
      }
    }
    return out;
  }
}
