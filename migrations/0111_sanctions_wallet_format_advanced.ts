// Wallet lists read from OFAC's sdn_advanced.xml are stored with their own format name.
import type { Knex } from 'knex';

const FORMATS = (formats: string[]) => formats.map((f) => `'${f}'`).join(', ');

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE sanctions_wallet_lists DROP CONSTRAINT IF EXISTS sanctions_wallet_lists_format_check');
  await knex.raw(
    `ALTER TABLE sanctions_wallet_lists ADD CONSTRAINT sanctions_wallet_lists_format_check CHECK (format IN (${FORMATS(['sdn_advanced', 'sdn_xml', 'sdn_csv', 'plain'])}))`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex('sanctions_wallet_lists').where({ format: 'sdn_advanced' }).delete();
  await knex.raw('ALTER TABLE sanctions_wallet_lists DROP CONSTRAINT IF EXISTS sanctions_wallet_lists_format_check');
  await knex.raw(
    `ALTER TABLE sanctions_wallet_lists ADD CONSTRAINT sanctions_wallet_lists_format_check CHECK (format IN (${FORMATS(['sdn_xml', 'sdn_csv', 'plain'])}))`,
  );
}
