// Freshness of the sanctions lists: HTTP validators and the last confirmation time of the persisted wallet
// list, the persisted last good name list (so a new instance starts with it), and why an operator was flagged.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sanctions_wallet_lists', (t) => {
    t.text('etag');
    t.text('last_modified');
    // Last time the source confirmed this list (a fetch, an unchanged file or a 304).
    t.timestamp('checked_at', { useTz: true });
  });
  await knex.schema.createTable('sanctions_name_lists', (t) => {
    t.bigIncrements('id').primary();
    t.text('source').notNullable();
    t.text('alt_source');
    t.text('sha256').notNullable();
    t.timestamp('published_at', { useTz: true });
    t.timestamp('loaded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('checked_at', { useTz: true });
    // {source: {etag, lastModified}, alt: {etag, lastModified}}
    t.jsonb('validators');
    t.integer('entry_count').notNullable();
    // Parsed entries; null for the bundled snapshot, which every instance has on disk.
    t.jsonb('entries');
  });
  await knex.schema.alterTable('accounts', (t) => {
    // Why screening flagged this account: listed name, entry uid, score and qualifiers (for the review screen).
    t.jsonb('sanctions_match');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => t.dropColumn('sanctions_match'));
  await knex.schema.dropTableIfExists('sanctions_name_lists');
  await knex.schema.alterTable('sanctions_wallet_lists', (t) => {
    t.dropColumn('etag');
    t.dropColumn('last_modified');
    t.dropColumn('checked_at');
  });
}
