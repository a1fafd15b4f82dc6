// The last good wallet-address sanctions lists, so a fresh instance starts with a list even when the source
// is unreachable. Only the newest few are kept (see WalletListStore.save).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sanctions_wallet_lists', (t) => {
    t.bigIncrements('id').primary();
    t.text('source').notNullable();
    t.text('format').notNullable().checkIn(['sdn_xml', 'sdn_csv', 'plain'], 'sanctions_wallet_lists_format_check');
    t.text('sha256').notNullable();
    t.timestamp('published_at', { useTz: true });
    t.timestamp('loaded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.integer('entry_count').notNullable();
    t.jsonb('counts').notNullable();
    // [[family, address, label, sdn_uid, listed_at], ...]
    t.jsonb('entries').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('sanctions_wallet_lists');
}
