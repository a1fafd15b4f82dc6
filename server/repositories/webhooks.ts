// knex access to webhook endpoints, the event outbox, deliveries and their attempts.
import type { Knex } from 'knex';
import type { WebhookEventType } from '../../shared/webhookSignature';

export interface WebhookEndpointRow {
  id: string;
  account_id: string;
  url: string;
  event_types: WebhookEventType[];
  secret_encrypted: string;
  created_at: Date;
}

export interface WebhookDeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  account_id: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  retry_window_start: Date;
  completed_at: Date | null;
}

export interface ClaimedDelivery extends WebhookDeliveryRow {
  type: WebhookEventType;
  data: Record<string, unknown>;
  event_created_at: Date;
  url: string;
  secret_encrypted: string;
}

export interface DeliveryLogRow extends WebhookDeliveryRow {
  type: WebhookEventType;
}

export class WebhooksRepository {
  constructor(private readonly db: Knex) {}

  async listEndpoints(input: { accountId: string }): Promise<WebhookEndpointRow[]> {
    return this.db('webhook_endpoints').where({ account_id: input.accountId }).orderBy('created_at', 'asc');
  }

  async findEndpoint(input: { accountId: string; id: string }): Promise<WebhookEndpointRow | undefined> {
    return (await this.db('webhook_endpoints').where({ account_id: input.accountId, id: input.id }).first()) as WebhookEndpointRow | undefined;
  }

  async countEndpoints(input: { accountId: string }): Promise<number> {
    const row = await this.db('webhook_endpoints').where({ account_id: input.accountId }).count<{ n: string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  async insertEndpoint(input: { accountId: string; url: string; eventTypes: WebhookEventType[]; secretEncrypted: string }): Promise<WebhookEndpointRow> {
    const [row] = (await this.db('webhook_endpoints')
      .insert({ account_id: input.accountId, url: input.url, event_types: input.eventTypes, secret_encrypted: input.secretEncrypted })
      .returning('*')) as WebhookEndpointRow[];
    return row;
  }

  async deleteEndpoint(input: { accountId: string; id: string }): Promise<boolean> {
    return (await this.db('webhook_endpoints').where({ account_id: input.accountId, id: input.id }).delete()) > 0;
  }

  async updateSecret(input: { accountId: string; id: string; secretEncrypted: string }): Promise<boolean> {
    return (await this.db('webhook_endpoints').where({ account_id: input.accountId, id: input.id }).update({ secret_encrypted: input.secretEncrypted })) > 0;
  }

  /** Writes the event and one pending delivery per subscribed endpoint; returns the delivery ids. */
  async recordEvent(
    input: { id: string; accountId: string; type: WebhookEventType; data: Record<string, unknown>; at: Date },
    trx: Knex.Transaction,
  ): Promise<string[]> {
    await trx('webhook_events').insert({ id: input.id, account_id: input.accountId, type: input.type, data: input.data, created_at: input.at });
    const rows = await trx.raw<{ rows: Array<{ id: string }> }>(
      `insert into webhook_deliveries (event_id, endpoint_id, account_id, status, next_attempt_at, created_at, retry_window_start)
       select ?, e.id, e.account_id, 'pending', ?, ?, ?
         from webhook_endpoints e
        where e.account_id = ? and ? = any(e.event_types)
       returning id`,
      [input.id, input.at, input.at, input.at, input.accountId, input.type],
    );
    return rows.rows.map((r) => r.id);
  }

  /**
   * Takes a due delivery for one attempt: moves next_attempt_at to `leaseUntil` so no other worker sends it
   * meanwhile (and a crashed attempt becomes due again), counts the attempt, and returns what is needed to send.
   */
  async claim(input: { id: string; now: Date; leaseUntil: Date }): Promise<ClaimedDelivery | undefined> {
    const claimed = await this.db.raw<{ rows: ClaimedDelivery[] }>(
      `with c as (
         update webhook_deliveries set next_attempt_at = ?, attempts = attempts + 1
          where id = ? and status = 'pending' and next_attempt_at <= ?
          returning *)
       select c.*, ev.type, ev.data, ev.created_at as event_created_at, ep.url, ep.secret_encrypted
         from c join webhook_events ev on ev.id = c.event_id join webhook_endpoints ep on ep.id = c.endpoint_id`,
      [input.leaseUntil, input.id, input.now],
    );
    return claimed.rows[0];
  }

  async recordAttempt(input: {
    deliveryId: string;
    at: Date;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
    outcome: { status: 'succeeded' | 'failed'; at: Date } | { status: 'pending'; nextAttemptAt: Date };
  }): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx('webhook_attempts').insert({
        delivery_id: input.deliveryId,
        attempted_at: input.at,
        status_code: input.statusCode,
        error: input.error,
        duration_ms: input.durationMs,
      });
      const patch =
        input.outcome.status === 'pending'
          ? { next_attempt_at: input.outcome.nextAttemptAt }
          : { status: input.outcome.status, completed_at: input.outcome.at, next_attempt_at: null };
      await trx('webhook_deliveries')
        .where({ id: input.deliveryId })
        .update({ ...patch, last_status_code: input.statusCode, last_error: input.error });
    });
  }

  async dueDeliveries(input: { now: Date; limit: number }): Promise<Array<{ id: string; attempts: number }>> {
    return this.db('webhook_deliveries')
      .select('id', 'attempts')
      .where({ status: 'pending' })
      .where('next_attempt_at', '<=', input.now)
      .orderBy('next_attempt_at', 'asc')
      .limit(input.limit);
  }

  /** The newest deliveries of one of the account's endpoints (the dashboard's log). */
  async listDeliveries(input: { accountId: string; endpointId: string; limit: number }): Promise<DeliveryLogRow[]> {
    return this.db('webhook_deliveries as d')
      .join('webhook_events as e', 'e.id', 'd.event_id')
      .select('d.*', 'e.type')
      .where({ 'd.account_id': input.accountId, 'd.endpoint_id': input.endpointId })
      .orderBy('d.created_at', 'desc')
      .limit(input.limit);
  }

  /** "Send again": the delivery becomes due now with a fresh retry window. */
  async resend(input: { accountId: string; id: string; now: Date }): Promise<WebhookDeliveryRow | undefined> {
    const [row] = (await this.db('webhook_deliveries')
      .where({ account_id: input.accountId, id: input.id })
      .update({ status: 'pending', next_attempt_at: input.now, retry_window_start: input.now, completed_at: null })
      .returning('*')) as WebhookDeliveryRow[];
    return row;
  }

  /** Accounts that should hear about an operator: merchants whose sessions it completed, and itself. */
  async accountsConcerningOperator(input: { operatorAccountId: string }, trx: Knex.Transaction): Promise<string[]> {
    const rows = await trx('sessions')
      .distinct('merchant_account_id as id')
      .where({ operator_account_id: input.operatorAccountId })
      .whereNotNull('merchant_account_id');
    const ids = new Set<string>(rows.map((r: { id: string }) => r.id));
    ids.add(input.operatorAccountId);
    return [...ids];
  }
}
