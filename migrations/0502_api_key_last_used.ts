// When each API key last authenticated a request (to the minute; written behind the request path), for the
// dashboard's API keys page.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table api_keys add column last_used_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table api_keys drop column last_used_at');
}
