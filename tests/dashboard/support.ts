// Shared by the dashboard tests: seeding assess audit rows for an account (bulk, via generate_series).
import type { Deps } from '../../server/deps';

/**
 * `n` audit rows spread evenly over the last `days` days, oldest first (as group commit writes them, so ids
 * follow time): every third a deny (kyc_required, or sanctions_flagged). The calls of the current month are
 * counted in the quota too, as the metered route would have.
 */
export async function seedAudit(deps: Deps, accountId: string, n: number, days = 30): Promise<void> {
  // In chunks: one statement must stay under the pool's statement timeout.
  for (let from = 1; from <= n; from += 10_000) await seedRange(deps, accountId, from, Math.min(n, from + 9_999), n, days);
  await deps.db.raw(
    `insert into usage_monthly (account_id, period, shard, count)
     select ?, to_char(now() at time zone 'utc', 'YYYY-MM'), 0, count(*) from assess_audit
      where account_id = ? and created_at >= date_trunc('month', now() at time zone 'utc') at time zone 'utc'
     on conflict (account_id, period, shard) do update set count = excluded.count`,
    [accountId, accountId],
  );
}

async function seedRange(deps: Deps, accountId: string, from: number, to: number, n: number, days: number): Promise<void> {
  await deps.db.raw(
    `insert into assess_audit (account_id, request_id, identity_kind, identity_value, decision, reasons, created_at)
     select ?, 'req_' || g, case when g % 2 = 0 then 'wallet' else 'operator_token' end, '0x' || md5(g::text),
            case when g % 3 = 0 then 'deny' else 'allow' end,
            case when g % 3 <> 0 then '{no_policy_applied}'::text[] when g % 2 = 0 then '{kyc_required}'::text[] else '{sanctions_flagged}'::text[] end,
            now() - make_interval(secs => (? - g) * (? * 86400.0 / ?))
       from generate_series(?::int, ?::int) g`,
    [accountId, n, days, n, from, to],
  );
}
