// Operator identity: claimed wallets, verification sessions, operator credentials, refresh tokens,
// captured wallets, the assess audit trail and the addresses assess has seen (for reputation).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('operator_wallets', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('network').notNullable().checkIn(['evm', 'solana'], 'operator_wallets_network_check');
    t.text('address').notNullable(); // EVM lowercase, Solana verbatim
    t.text('session_id');
    t.timestamp('claimed_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['network', 'address']); // a wallet belongs to at most one operator
    t.index(['account_id']);
  });

  await knex.schema.createTable('sessions', (t) => {
    t.text('id').primary();
    t.text('poll_secret_hash').notNullable();
    t.text('kind').notNullable().checkIn(['merchant', 'public', 'self'], 'sessions_kind_check');
    t.uuid('merchant_account_id').references('accounts.id').onDelete('SET NULL');
    t.uuid('operator_account_id').references('accounts.id').onDelete('SET NULL');
    t.text('client_id');
    t.text('context');
    t.text('product_name');
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'verified', 'consumed', 'expired', 'failed', 'flagged'], 'sessions_status_check');
    t.boolean('issue_refresh_token').notNullable().defaultTo(false);
    t.text('kyc_provider');
    t.text('kyc_reference');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('consumed_at', { useTz: true });
    t.index(['merchant_account_id', 'created_at']);
    t.index(['kyc_reference']);
  });

  await knex.schema.createTable('refresh_tokens', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.uuid('family_id').notNullable();
    t.uuid('parent_id').references('refresh_tokens.id').onDelete('SET NULL');
    t.text('token_hash').notNullable().unique();
    t.text('prefix').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('rotated_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.index(['family_id']);
  });

  await knex.schema.createTable('credentials', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('token_hash').notNullable().unique();
    t.text('prefix').notNullable();
    t.text('label');
    t.text('source').notNullable().checkIn(['api', 'session', 'refresh'], 'credentials_source_check');
    t.text('session_id');
    // The refresh token minted together with this credential, and the one whose rotation minted it.
    t.uuid('refresh_token_id').references('refresh_tokens.id').onDelete('SET NULL');
    t.uuid('minted_by_refresh_token_id').references('refresh_tokens.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('revoked_at', { useTz: true });
    t.timestamp('last_used_at', { useTz: true });
    t.index(['account_id']);
  });

  await knex.schema.createTable('wallet_captures', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('credential_id').notNullable().references('credentials.id').onDelete('CASCADE');
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE'); // the operator
    t.uuid('reported_by_account_id').references('accounts.id').onDelete('SET NULL'); // the merchant
    t.text('network').notNullable().checkIn(['evm', 'solana'], 'wallet_captures_network_check');
    t.text('wallet_address').notNullable();
    t.integer('transaction_count').notNullable().defaultTo(1);
    t.text('last_idempotency_key');
    t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['credential_id', 'wallet_address', 'network']);
    t.index(['network', 'wallet_address']);
    t.index(['account_id']);
  });

  await knex.schema.createTable('assess_audit', (t) => {
    t.bigIncrements('id').primary();
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('request_id').notNullable();
    t.text('identity_kind').notNullable(); // wallet | operator_token
    t.text('identity_value').notNullable(); // normalised address, or SHA-256 of the token (never the token)
    t.text('decision').notNullable();
    t.specificType('reasons', 'text[]').notNullable().defaultTo('{}');
    t.text('signer_kind');
    t.text('signer_sanctions');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id', 'created_at']);
  });

  await knex.schema.createTable('known_addresses', (t) => {
    t.text('address').notNullable();
    t.text('network').notNullable().checkIn(['evm', 'solana'], 'known_addresses_network_check');
    t.timestamp('first_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('refresh_requested_at', { useTz: true });
    t.primary(['network', 'address']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['known_addresses', 'assess_audit', 'wallet_captures', 'credentials', 'refresh_tokens', 'sessions', 'operator_wallets']) {
    await knex.schema.dropTableIfExists(table);
  }
}
