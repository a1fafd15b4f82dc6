// knex access to `kyc_webhook_events`: provider event ids already processed (providers retry and reorder).
import type { Knex } from 'knex';

export class KycEventsRepository {
  constructor(private readonly db: Knex) {}

  /** Records the event id; false when it was recorded before (the event is then skipped). */
  async recordOnce(input: { provider: string; eventId: string; eventType: string }, trx?: Knex.Transaction): Promise<boolean> {
    const rows = await (trx ?? this.db)('kyc_webhook_events')
      .insert({ provider: input.provider, event_id: input.eventId, event_type: input.eventType })
      .onConflict(['provider', 'event_id'])
      .ignore()
      .returning('event_id');
    return rows.length === 1;
  }
}
