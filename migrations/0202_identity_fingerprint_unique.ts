// One verified person, one operator account: the identity fingerprint becomes unique among operators, so two
// verifications of the same person finishing at the same time on two instances cannot create two accounts.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Databases that already hold duplicates keep the earliest operator (the one fingerprint look-ups have always
  // returned); the later duplicates lose only the fingerprint, never their wallets or credentials.
  await knex.raw(`
    update accounts a set identity_fingerprint = null
    where a.kind = 'operator' and a.identity_fingerprint is not null
      and exists (
        select 1 from accounts b
        where b.kind = 'operator' and b.identity_fingerprint = a.identity_fingerprint
          and (b.created_at, b.id) < (a.created_at, a.id)
      )`);
  await knex.raw(`
    create unique index accounts_operator_identity_fingerprint_uniq
    on accounts (identity_fingerprint)
    where kind = 'operator' and identity_fingerprint is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists accounts_operator_identity_fingerprint_uniq');
}
