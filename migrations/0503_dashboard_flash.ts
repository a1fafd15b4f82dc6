// A one-time message for the next page a dashboard session loads (Post/Redirect/Get): e.g. a new API key,
// shown once after the redirect. Encrypted under the PII key, short-lived, cleared when read.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table dashboard_sessions add column flash_encrypted text, add column flash_expires_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table dashboard_sessions drop column flash_encrypted, drop column flash_expires_at');
}
