// Quota counts as a few shards per (account, month): concurrent group-commit batches from several instances
// add to different rows instead of queueing on one merchant's row lock. The count is the sum of the shards.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table usage_monthly add column shard smallint not null default 0');
  await knex.raw('alter table usage_monthly alter column count type bigint');
  await knex.raw('alter table usage_monthly drop constraint usage_monthly_pkey');
  await knex.raw('alter table usage_monthly add constraint usage_monthly_pkey primary key (account_id, period, shard)');
}

export async function down(knex: Knex): Promise<void> {
  // Folds the shards back into one row per (account, month) before the column goes.
  await knex.raw(`
    with folded as (
      delete from usage_monthly where shard <> 0
      returning account_id, period, count
    ), sums as (
      select account_id, period, sum(count) as count from folded group by account_id, period
    )
    insert into usage_monthly (account_id, period, shard, count)
    select account_id, period, 0, count from sums
    on conflict (account_id, period, shard) do update set count = usage_monthly.count + excluded.count`);
  await knex.raw('alter table usage_monthly drop constraint usage_monthly_pkey');
  await knex.raw('alter table usage_monthly drop column shard');
  await knex.raw('alter table usage_monthly alter column count type integer');
  await knex.raw('alter table usage_monthly add constraint usage_monthly_pkey primary key (account_id, period)');
}
