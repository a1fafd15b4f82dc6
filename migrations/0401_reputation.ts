// Reputation: what the chain indexer reads (checkpoints, ERC-8004 agents, their events and feedback, candidate
// x402 payments) and what the scorer writes (per-address subjects, per-chain scores, per-agent scores).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // One row per (chain, contract): the last block whose logs are fully committed. Advanced in the same
  // transaction as the rows it covers, so a crash never skips or repeats a range.
  await knex.schema.createTable('chain_checkpoints', (t) => {
    t.text('chain').notNullable();
    t.text('contract').notNullable(); // lowercase address
    t.text('kind').notNullable().checkIn(['identity', 'reputation', 'usdc'], 'chain_checkpoints_kind_check');
    t.bigInteger('last_block').notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['chain', 'contract']);
  });

  // Indexer health per chain: the scorer refuses to publish fresh scores for a chain that is not in sync.
  await knex.schema.createTable('chain_sync_state', (t) => {
    t.text('chain').primary();
    t.bigInteger('head_block');
    t.bigInteger('safe_block');
    t.timestamp('last_synced_at', { useTz: true });
    t.text('last_error');
    t.timestamp('last_error_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  // Raw registry events, applied to derived state exactly once (the unique key is the idempotency guard).
  await knex.schema.createTable('erc8004_events', (t) => {
    t.text('chain').notNullable();
    t.text('tx_hash').notNullable();
    t.integer('log_index').notNullable();
    t.bigInteger('block_number').notNullable();
    t.text('contract').notNullable();
    t.text('event').notNullable();
    t.text('token_id');
    t.jsonb('payload').notNullable();
    t.timestamp('block_time', { useTz: true });
    t.primary(['chain', 'tx_hash', 'log_index']);
    t.index(['chain', 'token_id']);
  });

  await knex.schema.createTable('erc8004_agents', (t) => {
    t.text('chain').notNullable();
    t.text('token_id').notNullable(); // uint256 as a decimal string
    t.text('registry').notNullable();
    t.text('owner').notNullable();
    t.text('agent_uri');
    t.text('agent_wallet');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.bigInteger('registered_block');
    t.timestamp('registered_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Registration file (agentURI) resolution, done outside the indexing transaction.
    t.text('registration_status')
      .notNullable()
      .defaultTo('pending')
      .checkIn(['pending', 'ok', 'error', 'unsupported', 'none'], 'erc8004_agents_registration_status_check');
    t.text('registration_uri'); // the agent_uri the stored registration describes
    t.jsonb('registration');
    t.text('registration_error');
    t.integer('registration_attempts').notNullable().defaultTo(0);
    t.timestamp('registration_fetched_at', { useTz: true });
    // Off-chain evidence derived from the registration (website, GitHub).
    t.jsonb('evidence');
    t.timestamp('evidence_checked_at', { useTz: true });
    t.primary(['chain', 'token_id']);
    t.index(['chain', 'owner']);
    t.index(['owner']);
    t.index(['agent_wallet']);
  });

  await knex.schema.createTable('erc8004_feedback', (t) => {
    t.text('chain').notNullable();
    t.text('token_id').notNullable();
    t.text('client_address').notNullable();
    t.bigInteger('feedback_index').notNullable();
    t.text('value').notNullable(); // int128 as a decimal string
    t.integer('value_decimals').notNullable();
    t.text('tag1').notNullable().defaultTo('');
    t.text('tag2').notNullable().defaultTo('');
    t.text('endpoint');
    t.text('feedback_uri');
    t.bigInteger('block_number').notNullable();
    t.text('tx_hash').notNullable();
    t.timestamp('given_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.primary(['chain', 'token_id', 'client_address', 'feedback_index']);
    t.index(['client_address']);
  });

  // USDC Transfer logs whose transaction also carries an EIP-3009 AuthorizationUsed by the payer.
  await knex.schema.createTable('candidate_payments', (t) => {
    t.text('chain').notNullable();
    t.text('tx_hash').notNullable();
    t.integer('log_index').notNullable();
    t.text('token').notNullable();
    t.text('payer').notNullable();
    t.text('payee').notNullable();
    t.text('value').notNullable(); // uint256 as a decimal string
    t.text('nonce').notNullable();
    t.bigInteger('block_number').notNullable();
    t.timestamp('block_time', { useTz: true }).notNullable();
    t.primary(['chain', 'tx_hash', 'log_index']);
    t.index(['payer', 'chain']);
    t.index(['payee', 'chain']);
  });

  await knex.schema.createTable('reputation_subjects', (t) => {
    t.text('network').notNullable().checkIn(['evm', 'solana'], 'reputation_subjects_network_check');
    t.text('address').notNullable();
    t.specificType('chains', 'text[]').notNullable().defaultTo('{}');
    t.decimal('score', 6, 2);
    t.text('grade');
    t.text('entity_type');
    t.jsonb('operator_score');
    t.jsonb('reputation');
    t.jsonb('agents').notNullable().defaultTo('[]');
    t.specificType('caveats', 'text[]').notNullable().defaultTo('{}');
    t.text('version').notNullable().defaultTo('v1');
    t.timestamp('scored_at', { useTz: true });
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.text('last_error');
    t.primary(['network', 'address']);
    t.index(['scored_at']);
  });

  await knex.schema.createTable('reputation_chain_scores', (t) => {
    t.text('network').notNullable();
    t.text('address').notNullable();
    t.text('chain').notNullable();
    t.decimal('score', 6, 2).notNullable();
    t.text('grade').notNullable();
    t.decimal('confidence', 4, 3).notNullable();
    t.jsonb('dimensions').notNullable();
    t.jsonb('classification').notNullable();
    t.jsonb('identity').notNullable();
    t.jsonb('activity').notNullable();
    t.jsonb('evidence').notNullable();
    t.text('version').notNullable();
    t.timestamp('scored_at', { useTz: true }).notNullable();
    t.primary(['network', 'address', 'chain']);
  });

  await knex.schema.createTable('reputation_agent_scores', (t) => {
    t.text('chain').notNullable();
    t.text('token_id').notNullable();
    t.decimal('score', 6, 2).notNullable();
    t.text('grade').notNullable();
    t.decimal('confidence', 4, 3).notNullable();
    t.jsonb('dimensions').notNullable();
    t.text('version').notNullable();
    t.timestamp('scored_at', { useTz: true }).notNullable();
    t.primary(['chain', 'token_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'reputation_agent_scores',
    'reputation_chain_scores',
    'reputation_subjects',
    'candidate_payments',
    'erc8004_feedback',
    'erc8004_agents',
    'erc8004_events',
    'chain_sync_state',
    'chain_checkpoints',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
