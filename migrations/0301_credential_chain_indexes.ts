// Indexes behind credential cascade revocation and the credential list: walking refresh-token rotations
// (parent_id) and finding the credentials minted with or by a refresh token.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.index(['parent_id'], 'refresh_tokens_parent_id_index');
  });
  await knex.schema.alterTable('credentials', (t) => {
    t.index(['refresh_token_id'], 'credentials_refresh_token_id_index');
    t.index(['minted_by_refresh_token_id'], 'credentials_minted_by_refresh_token_id_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('credentials', (t) => {
    t.dropIndex(['minted_by_refresh_token_id'], 'credentials_minted_by_refresh_token_id_index');
    t.dropIndex(['refresh_token_id'], 'credentials_refresh_token_id_index');
  });
  await knex.schema.alterTable('refresh_tokens', (t) => {
    t.dropIndex(['parent_id'], 'refresh_tokens_parent_id_index');
  });
}
