// The assess audit trail (`assess_audit`): rows are group-committed with the request's quota increment and
// are in PostgreSQL before the decision's response is sent (a failed commit fails the request with 503).
import type { Knex } from 'knex';

export interface AuditEntry {
  account_id: string;
  request_id: string;
  identity_kind: 'wallet' | 'operator_token';
  /** Normalised address, or the SHA-256 of the token (never the token). */
  identity_value: string;
  decision: 'allow' | 'deny';
  reasons: string[];
  signer_kind: string | null;
  /** `clear`, `sanctioned`, `unavailable`, or null without a signer. */
  signer_sanctions: string | null;
  created_at: Date;
}

export interface AuditRow extends AuditEntry {
  id: number;
}

export class AuditRepository {
  constructor(private readonly db: Knex) {}

  async listForAccount(input: { accountId: string; limit?: number }): Promise<AuditRow[]> {
    return this.db<AuditRow>('assess_audit')
      .where({ account_id: input.accountId })
      .orderBy('id', 'asc')
      .limit(input.limit ?? 1000);
  }
}

/** What the audit log writes through: the group commit shared with quota counts (services/meteredRecords). */
export interface AuditWriter {
  recordAudit(entry: AuditEntry): void;
  drain(): Promise<void>;
}

/** Where assess records its decisions; each row is committed before the decision's response goes out. */
export class AuditLog {
  constructor(private readonly writer: AuditWriter) {}

  record(entry: AuditEntry): void {
    this.writer.recordAudit(entry);
  }

  /** Resolves once every row recorded so far is committed. */
  flush(): Promise<void> {
    return this.writer.drain();
  }
}
