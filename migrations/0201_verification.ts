// Verification flow state: wallet-ownership challenges (single use), KYC webhook events (each id processed
// once), and an identity fingerprint on accounts so the same verified person maps to the same operator.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('wallet_challenges', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.text('session_id').notNullable().references('sessions.id').onDelete('CASCADE');
    t.text('nonce').notNullable().unique();
    t.text('message').notNullable();
    t.timestamp('issued_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    // Set once by a conditional UPDATE: a second use of the same challenge finds it already set (replay).
    t.timestamp('used_at', { useTz: true });
    t.index(['session_id', 'expires_at']);
  });

  await knex.schema.createTable('kyc_webhook_events', (t) => {
    t.text('provider').notNullable();
    t.text('event_id').notNullable();
    t.text('event_type').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['provider', 'event_id']);
  });

  await knex.schema.alterTable('accounts', (t) => {
    // HMAC of the normalised verified identity (never the identity itself): re-verification reuses the operator.
    t.text('identity_fingerprint');
    t.index(['identity_fingerprint'], 'accounts_identity_fingerprint_idx');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('accounts', (t) => {
    t.dropIndex(['identity_fingerprint'], 'accounts_identity_fingerprint_idx');
    t.dropColumn('identity_fingerprint');
  });
  await knex.schema.dropTableIfExists('kyc_webhook_events');
  await knex.schema.dropTableIfExists('wallet_challenges');
}
