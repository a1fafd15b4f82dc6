// Accounts (merchants and operators share one table: an operator is an account without an API key),
// API keys (hashed), and durable monthly usage counts.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('kind').notNullable().defaultTo('merchant').checkIn(['merchant', 'operator'], 'accounts_kind_check');
    t.text('name').notNullable();
    t.text('display_name');
    t.text('tier').notNullable().defaultTo('free').checkIn(['free', 'paid', 'enterprise'], 'accounts_tier_check');
    t.text('status').notNullable().defaultTo('active').checkIn(['active', 'cancelled'], 'accounts_status_check');
    t.integer('quota_override').checkPositive();
    t.integer('rps_override').checkPositive();
    t.specificType('disabled_endpoints', 'text[]').notNullable().defaultTo('{}');
    t.integer('sanctions_freshness_days').checkPositive();
    // Operator identity state (KYC). PII itself is only in pii_encrypted (AES-256-GCM).
    t.text('kyc_status').notNullable().defaultTo('none').checkIn(['none', 'pending', 'verified', 'failed', 'flagged'], 'accounts_kyc_status_check');
    t.timestamp('kyc_verified_at', { useTz: true });
    t.text('operator_type');
    t.specificType('jurisdiction', 'char(2)');
    t.text('age_bracket');
    t.boolean('age_verified').notNullable().defaultTo(false);
    t.text('sanctions_status').checkIn(['clear', 'flagged'], 'accounts_sanctions_status_check');
    t.timestamp('sanctions_checked_at', { useTz: true });
    t.text('verification_level').notNullable().defaultTo('none').checkIn(['none', 'wallet_claimed', 'kyc_verified'], 'accounts_verification_level_check');
    t.text('kyc_provider');
    t.text('kyc_reference');
    t.text('pii_encrypted');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('cancelled_at', { useTz: true });
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('key_hash').notNullable().unique();
    t.text('prefix').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.index(['account_id']);
  });

  await knex.schema.createTable('usage_monthly', (t) => {
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.specificType('period', 'char(7)').notNullable(); // YYYY-MM (UTC)
    t.integer('count').notNullable().defaultTo(0);
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['account_id', 'period']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('usage_monthly');
  await knex.schema.dropTableIfExists('api_keys');
  await knex.schema.dropTableIfExists('accounts');
}
