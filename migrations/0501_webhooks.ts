// Merchant self-service: signed webhooks (endpoints, an event outbox, deliveries and every attempt), dashboard
// sign-in (server-side sessions and one-time sign-in links, both stored hashed) and the verify-page branding.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.text('support_email');
    t.text('logo_url');
  });

  // Overdue merchant sessions are expired by a sweep so their merchants hear `session.expired`.
  await knex.raw(`create index sessions_pending_expiry_idx on sessions (expires_at) where status = 'pending'`);

  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.specificType('event_types', 'text[]').notNullable();
    // AES-GCM under the PII key: the merchant must be able to read the signing secret back.
    t.text('secret_encrypted').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id']);
  });

  // The outbox: written in the same transaction as the state change it reports, so a crash loses nothing.
  await knex.schema.createTable('webhook_events', (t) => {
    t.text('id').primary(); // evt_…: receivers dedupe by it
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.jsonb('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id', 'created_at']);
  });

  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('event_id').notNullable().references('webhook_events.id').onDelete('CASCADE');
    t.uuid('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('status').notNullable().defaultTo('pending').checkIn(['pending', 'succeeded', 'failed'], 'webhook_deliveries_status_check');
    t.integer('attempts').notNullable().defaultTo(0);
    // Also the claim lease: a worker pushes it forward before sending, so a crashed attempt is retried later.
    t.timestamp('next_attempt_at', { useTz: true });
    t.integer('last_status_code');
    t.text('last_error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Retries stop maxAge after this (the creation time, or when the merchant asked to send again).
    t.timestamp('retry_window_start', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['endpoint_id', 'created_at']);
  });
  await knex.raw(`create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'pending'`);

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.bigIncrements('id');
    t.uuid('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.timestamp('attempted_at', { useTz: true }).notNullable();
    t.integer('status_code');
    t.text('error');
    t.integer('duration_ms').notNullable();
    t.index(['delivery_id']);
  });

  // The dashboard's activity list pages newest-first by id within one account.
  await knex.raw('create index assess_audit_account_id_idx on assess_audit (account_id, id)');

  await knex.schema.createTable('dashboard_sessions', (t) => {
    t.text('id_hash').primary();
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable();
    t.index(['account_id']);
  });

  await knex.schema.createTable('dashboard_login_links', (t) => {
    t.text('token_hash').primary();
    t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('dashboard_login_links');
  await knex.schema.dropTableIfExists('dashboard_sessions');
  await knex.raw('drop index if exists assess_audit_account_id_idx');
  await knex.schema.dropTableIfExists('webhook_attempts');
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhook_events');
  await knex.schema.dropTableIfExists('webhook_endpoints');
  await knex.raw('drop index if exists sessions_pending_expiry_idx');
  await knex.schema.alterTable('accounts', (t) => {
    t.dropColumn('logo_url');
    t.dropColumn('support_email');
  });
}
