// Wallet claims on the verify page are bound to one browser: the session keeps only a hash of that browser's
// claim key (a random cookie value), never the key itself.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sessions', (t) => {
    t.text('claim_key_hash');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sessions', (t) => {
    t.dropColumn('claim_key_hash');
  });
}
