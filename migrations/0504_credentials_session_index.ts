// The dashboard lists the credentials a merchant's verification sessions delivered: found from the merchant's
// sessions (sessions.merchant_account_id) through credentials.session_id.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index credentials_session_id_idx on credentials (session_id) where session_id is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists credentials_session_id_idx');
}
