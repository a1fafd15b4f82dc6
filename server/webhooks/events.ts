// What the state-changing services need to record a webhook event, and the event bodies they record.
import type { Knex } from 'knex';
import type { WebhookEventType } from '../../shared/webhookSignature';
import { operatorHandle } from '../crypto';
import type { SessionRow } from '../repositories/sessions';

/** One event for one merchant account. */
export interface WebhookEventInput {
  accountId: string;
  type: WebhookEventType;
  data: Record<string, unknown>;
}

export interface WebhookEmitter {
  /** Records the event inside `trx` (it is delivered only if the transaction commits). */
  emit(event: WebhookEventInput, trx: Knex.Transaction): Promise<void>;
}

const SESSION_EVENTS: Partial<Record<SessionRow['status'], WebhookEventType>> = {
  verified: 'session.verified',
  failed: 'session.failed',
  flagged: 'session.flagged',
  expired: 'session.expired',
};

/** Records the session's terminal status for the merchant that created it (public sessions have none). */
export async function emitSessionEvent(
  webhooks: WebhookEmitter | undefined,
  trx: Knex.Transaction,
  serverSecret: string,
  row: SessionRow | undefined,
): Promise<void> {
  const type = row && SESSION_EVENTS[row.status];
  if (!webhooks || !row || !type || !row.merchant_account_id) return;
  const accountId = row.merchant_account_id;
  const data = {
    session_id: row.id,
    status: row.status,
    context: row.context,
    // The merchant's pairwise handle for the operator, as the API returns it: never the internal id.
    operator_handle: row.operator_account_id ? operatorHandle(serverSecret, row.operator_account_id, accountId) : null,
    completed_at: (row.completed_at ?? row.expires_at).toISOString(),
  };
  await webhooks.emit({ accountId, type, data }, trx);
}
