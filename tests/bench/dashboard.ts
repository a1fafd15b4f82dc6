// Dashboard render times with a large audit trail: seeds N assess audit rows (default 100,000, over the last 30
// days) for one merchant in the test database, signs in, and prints the median and 95th percentile of repeated
// renders of the Overview and Activity pages (first page, filtered, cursor page). `--csv` adds the CSV export.
//   TEST_DATABASE_URL=… TEST_REDIS_URL=… npm run bench:dashboard [-- rows] [--csv]
import request from 'supertest';
import { createHarness, createMerchant, resetTables } from '../support/harness';
import { seedAudit } from '../dashboard/support';
import { migrateLatest } from '../../server/db/knex';

const RUNS = 21;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main() {
  const args = process.argv.slice(2);
  const rows = Number(args.find((a) => /^\d+$/.test(a)) ?? 100_000);
  const h = await createHarness();
  try {
    await migrateLatest(h.deps.db);
    await resetTables(h.deps, ['accounts']);
    const m = await createMerchant(h.deps, { tier: 'paid' });
    const t0 = Date.now();
    await seedAudit(h.deps, m.accountId, rows);
    await h.deps.db.raw('analyze assess_audit');
    console.log(`seeded ${rows} audit rows in ${Date.now() - t0} ms`);
    const session = (await h.deps.services.dashboard.signInWithKey(m.apiKey))!;
    const cookie = `kya_dashboard=${session.sessionId}`;
    const firstPage = await h.deps.services.dashboard.activity({ accountId: m.accountId, limit: 51 });
    const pages: Array<[string, string, number]> = [
      ['Overview', '/dashboard', RUNS],
      ['Activity, first page', '/dashboard/activity', RUNS],
      ['Activity, deny + kyc_required', '/dashboard/activity?decision=deny&reason=kyc_required', RUNS],
      ['Activity, date range + wallet', '/dashboard/activity?from=2000-01-01&to=2100-01-01&kind=wallet', RUNS],
      ['Activity, next page (cursor)', `/dashboard/activity?before=${firstPage[49].id}`, RUNS],
      // No seeded row is a wallet denied for sanctions: every row of the account is read to find that out.
      ['Activity, filter matching none', '/dashboard/activity?decision=deny&reason=sanctions_flagged&kind=wallet', RUNS],
    ];
    if (args.includes('--csv')) pages.push(['CSV export, all rows', '/dashboard/activity.csv', 3]);
    for (const [name, url, runs] of pages) {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < runs; i++) {
        const start = process.hrtime.bigint();
        const res = await request(h.app).get(url).set('Cookie', cookie);
        times.push(Number(process.hrtime.bigint() - start) / 1e6);
        if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
        bytes = res.text.length;
      }
      times.sort((a, b) => a - b);
      const fmt = (ms: number) => ms.toFixed(1).padStart(8);
      console.log(`${name.padEnd(32)} median ${fmt(percentile(times, 50))} ms  p95 ${fmt(percentile(times, 95))} ms  (${runs} renders, ${bytes} bytes)`);
    }
  } finally {
    await h.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
