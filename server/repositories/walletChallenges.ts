// knex access to `wallet_challenges`: single-use wallet-ownership challenges issued by the verify page.
import type { Knex } from 'knex';

export interface WalletChallengeRow {
  id: string;
  session_id: string;
  nonce: string;
  message: string;
  issued_at: Date;
  expires_at: Date;
  used_at: Date | null;
}

export class WalletChallengesRepository {
  constructor(private readonly db: Knex) {}

  async insert(input: { challenge: Omit<WalletChallengeRow, 'id' | 'used_at'> }, trx?: Knex.Transaction): Promise<WalletChallengeRow> {
    const [row] = await (trx ?? this.db)<WalletChallengeRow>('wallet_challenges').insert(input.challenge).returning('*');
    return row;
  }

  /** The newest unused challenge of a session that stays valid until at least `validUntil`. */
  async findReusable(input: { sessionId: string; validUntil: Date }, trx?: Knex.Transaction): Promise<WalletChallengeRow | undefined> {
    return (trx ?? this.db)<WalletChallengeRow>('wallet_challenges')
      .where({ session_id: input.sessionId })
      .whereNull('used_at')
      .where('expires_at', '>', input.validUntil)
      .orderBy('issued_at', 'desc')
      .first();
  }

  async findById(input: { id: string }, trx?: Knex.Transaction): Promise<WalletChallengeRow | undefined> {
    return (trx ?? this.db)<WalletChallengeRow>('wallet_challenges').where({ id: input.id }).first();
  }

  /** Uses the challenge once: false when it was already used (a replay) or has expired. */
  async markUsed(input: { id: string; at: Date }, trx: Knex.Transaction): Promise<boolean> {
    const n = await trx<WalletChallengeRow>('wallet_challenges')
      .where({ id: input.id })
      .whereNull('used_at')
      .where('expires_at', '>', input.at)
      .update({ used_at: input.at });
    return n === 1;
  }
}
