// Reputation tables the scorer writes and the endpoint reads (subjects, per-chain and per-agent scores), plus
// the identity lookups reputation needs from other areas' tables: known addresses, claimed and captured
// wallets and their operator's verification level. knex only.
import type { Knex } from 'knex';
import type { DriverRow } from '../db/rows';
import { COUNTED_CAPTURES_SQL } from './ownedWallets';
import type { AddressFamily, VerificationLevel } from '../../shared/types';

export interface SubjectRow {
  network: AddressFamily;
  address: string;
  chains: string[];
  score: number | null;
  grade: string | null;
  entity_type: string | null;
  operator_score: Record<string, unknown> | null;
  reputation: Record<string, unknown> | null;
  agents: Array<Record<string, unknown>>;
  caveats: string[];
  version: string;
  scored_at: Date | null;
  updated_at: Date;
}

export interface ChainScoreRow {
  network: string;
  address: string;
  chain: string;
  score: number;
  grade: string;
  confidence: number;
  dimensions: Record<string, number>;
  classification: Record<string, unknown>;
  identity: Record<string, unknown>;
  activity: Record<string, unknown>;
  evidence: Record<string, unknown>;
  version: string;
  scored_at: Date;
}

export interface AgentScoreRow {
  chain: string;
  token_id: string;
  score: number;
  grade: string;
  confidence: number;
  dimensions: Record<string, number>;
  version: string;
  scored_at: Date;
}

export interface CaptureRow {
  wallet_address: string;
  account_id: string;
  transaction_count: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

interface KnownAddressRow {
  network: AddressFamily;
  address: string;
  first_seen_at: Date;
}

const LEVEL_RANK: Record<VerificationLevel, number> = { none: 0, wallet_claimed: 1, kyc_verified: 2 };

export class ReputationRepository {
  constructor(private readonly db: Knex) {}

  async knownAddress(input: { network: AddressFamily; address: string }, trx?: Knex.Transaction): Promise<{ first_seen_at: Date } | null> {
    return (
      (await (trx ?? this.db)<KnownAddressRow>('known_addresses').where({ network: input.network, address: input.address }).first('first_seen_at')) ?? null
    );
  }

  /** Claimed or captured by some operator (the service has seen this wallet itself); see ownedWallets.ts. */
  async isLinkedWallet(input: { network: string; address: string }, trx?: Knex.Transaction): Promise<boolean> {
    const { network, address } = input;
    const row = await (trx ?? this.db).raw<{ rows: Array<{ linked: boolean }> }>(
      `select exists(select 1 from operator_wallets where network = ? and address = ?)
           or exists(select 1 from ${COUNTED_CAPTURES_SQL} where wc.network = ? and wc.wallet_address = ?) as linked`,
      [network, address, network, address],
    );
    return Boolean(row.rows[0]?.linked);
  }

  /** The highest verification level among operators that claimed or captured this wallet; 'none' otherwise. */
  async verificationLevel(input: { network: string; address: string }, trx?: Knex.Transaction): Promise<VerificationLevel> {
    const { network, address } = input;
    const rows = await (trx ?? this.db).raw<{ rows: Array<{ verification_level: VerificationLevel }> }>(
      `select a.verification_level from accounts a
        where a.id in (select account_id from operator_wallets where network = ? and address = ?
                       union select wc.account_id from ${COUNTED_CAPTURES_SQL} where wc.network = ? and wc.wallet_address = ?)`,
      [network, address, network, address],
    );
    let best: VerificationLevel = 'none';
    for (const r of rows.rows) {
      if (LEVEL_RANK[r.verification_level] > LEVEL_RANK[best]) best = r.verification_level;
    }
    return best;
  }

  async capturesOf(input: { network: string; addresses: string[] }, trx?: Knex.Transaction): Promise<CaptureRow[]> {
    const { network, addresses } = input;
    if (addresses.length === 0) return [];
    const { rows } = await (trx ?? this.db).raw<{ rows: Array<DriverRow<CaptureRow, 'transaction_count'>> }>(
      `select wc.wallet_address, wc.account_id, wc.transaction_count, wc.first_seen_at, wc.last_seen_at
         from ${COUNTED_CAPTURES_SQL} where wc.network = ? and wc.wallet_address = any(?)`,
      [network, addresses],
    );
    return rows.map((r) => ({
      ...r,
      transaction_count: Number(r.transaction_count),
      first_seen_at: new Date(r.first_seen_at),
      last_seen_at: new Date(r.last_seen_at),
    }));
  }

  async getSubject(input: { network: string; address: string }, trx?: Knex.Transaction): Promise<SubjectRow | null> {
    const row = await (trx ?? this.db)<DriverRow<SubjectRow, 'score'>>('reputation_subjects')
      .where('network', input.network)
      .andWhere('address', input.address)
      .first();
    return row ? { ...row, score: row.score === null ? null : Number(row.score) } : null;
  }

  async chainScores(input: { network: string; address: string }, trx?: Knex.Transaction): Promise<ChainScoreRow[]> {
    const rows = await (trx ?? this.db)<DriverRow<ChainScoreRow, 'score' | 'confidence'>>('reputation_chain_scores')
      .where({ network: input.network, address: input.address })
      .orderBy('chain');
    return rows.map((r) => ({ ...r, score: Number(r.score), confidence: Number(r.confidence) }));
  }

  async agentScores(input: { keys: Array<{ chain: string; token_id: string }> }, trx?: Knex.Transaction): Promise<AgentScoreRow[]> {
    const { keys } = input;
    if (keys.length === 0) return [];
    const rows = await (trx ?? this.db)<DriverRow<AgentScoreRow, 'score' | 'confidence'>>('reputation_agent_scores').whereIn(
      ['chain', 'token_id'],
      keys.map((k) => [k.chain, k.token_id]),
    );
    return rows.map((r) => ({ ...r, score: Number(r.score), confidence: Number(r.confidence) }));
  }

  async saveChainScores(input: { rows: ChainScoreRow[] }, trx?: Knex.Transaction): Promise<void> {
    if (input.rows.length === 0) return;
    const data = input.rows.map((row) => ({
      ...row,
      dimensions: JSON.stringify(row.dimensions),
      classification: JSON.stringify(row.classification),
      identity: JSON.stringify(row.identity),
      activity: JSON.stringify(row.activity),
      evidence: JSON.stringify(row.evidence),
    }));
    await (trx ?? this.db)('reputation_chain_scores').insert(data).onConflict(['network', 'address', 'chain']).merge();
  }

  async saveAgentScores(input: { rows: AgentScoreRow[] }, trx?: Knex.Transaction): Promise<void> {
    const { rows } = input;
    if (rows.length === 0) return;
    await (trx ?? this.db)('reputation_agent_scores')
      .insert(rows.map((r) => ({ ...r, dimensions: JSON.stringify(r.dimensions) })))
      .onConflict(['chain', 'token_id'])
      .merge();
  }

  async saveSubject(input: { row: SubjectRow & { last_error?: string | null } }, trx?: Knex.Transaction): Promise<void> {
    const { row } = input;
    const data = {
      ...row,
      operator_score: row.operator_score === null ? null : JSON.stringify(row.operator_score),
      reputation: row.reputation === null ? null : JSON.stringify(row.reputation),
      agents: JSON.stringify(row.agents),
    };
    await (trx ?? this.db)('reputation_subjects').insert(data).onConflict(['network', 'address']).merge();
  }

  /** The subset of `addresses` that already has a profile or was seen by assess. */
  async filterKnown(input: { network: string; addresses: string[] }, trx?: Knex.Transaction): Promise<string[]> {
    const { network, addresses } = input;
    if (addresses.length === 0) return [];
    const rows = await (trx ?? this.db).raw<{ rows: Array<{ address: string }> }>(
      `select address from reputation_subjects where network = ? and address = any(?)
       union select address from known_addresses where network = ? and address = any(?)`,
      [network, addresses, network, addresses],
    );
    return rows.rows.map((r) => r.address);
  }

  /** Subjects whose score is older than `before` (oldest first), for the periodic re-score. */
  async staleSubjects(input: { before: Date; limit: number }, trx?: Knex.Transaction): Promise<Array<{ network: AddressFamily; address: string }>> {
    return (trx ?? this.db)<SubjectRow>('reputation_subjects')
      .where('scored_at', '<', input.before)
      .orderBy('scored_at')
      .limit(input.limit)
      .select('network', 'address');
  }

  /** Addresses assess has seen that were never scored (their job may have been lost), oldest first. */
  async unscoredKnown(input: { limit: number }, trx?: Knex.Transaction): Promise<Array<{ network: AddressFamily; address: string }>> {
    return (trx ?? this.db)<KnownAddressRow>('known_addresses as k')
      .leftJoin('reputation_subjects as s', function () {
        this.on('s.network', 'k.network').andOn('s.address', 'k.address');
      })
      .where((q) => void q.whereNull('s.address').orWhereNull('s.scored_at'))
      .orderBy('k.first_seen_at')
      .limit(input.limit)
      .select<Array<{ network: AddressFamily; address: string }>>('k.network', 'k.address');
  }
}
