// `npm run bench:assess`: POST /v1/assess (wallet mode, a policy and a payment signer) against a plain Express
// hello-world JSON route, both as separate server processes on this machine, driven by autocannon at 10 and
// 50 connections. The identity server runs on PostgreSQL + Redis with 10,000 operators and 30,000 claimed
// wallets. Prints req/s, p50, p99, peak RSS and the ratio to hello-world. Not a test: figures, no asserts.
//
// Env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/kya_bench_assess), BENCH_REDIS_URL
// (default redis://127.0.0.1:6379/2), BENCH_SECONDS (default 10).
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import knexFactory from 'knex';
import { cpuMs, createBenchMerchant, ensureDatabase, median, peakRssMb, pidsNamed, ROOT, seedOperators, startProcess, withChildren } from './support';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/kya_bench_assess';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/2';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const OPERATORS = 10_000;
const WALLETS_PER_OPERATOR = 3;
const ASSESS_PORT = 3311;
const HELLO_PORT = 3312;


/** Seeds operators with three claimed wallets each (all already known), and one Paid merchant. */
async function seed(): Promise<{ apiKey: string; pairs: Array<[string, string]> }> {
  const db = knexFactory({ client: 'pg', connection: DATABASE_URL });
  try {
    await seedOperators(db, { operators: OPERATORS, walletsPerOperator: WALLETS_PER_OPERATOR, mixedAges: true });
    const apiKey = await createBenchMerchant(db, { name: 'Bench Merchant', tier: 'paid', quota_override: 1_000_000_000, rps_override: 1_000_000 });
    const rows: Array<{ account_id: string; address: string }> = (
      await db.raw(`select account_id, address from operator_wallets order by account_id, claimed_at limit 3000`)
    ).rows;
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i + 1 < rows.length; i += 3) pairs.push([rows[i].address, rows[i + 1].address]);
    const counts = (await db.raw(`select (select count(*) from accounts where kind = 'operator') as operators, (select count(*) from operator_wallets) as wallets`)).rows[0];
    console.log(`seeded ${counts.operators} operators, ${counts.wallets} wallets`);
    return { apiKey, pairs };
  } finally {
    await db.destroy();
  }
}



const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU µs per request spent by the server process, PostgreSQL, Redis and the load generator. */
  cpu: { server: number; postgres: number; redis: number; loadgen: number };
}

async function drive(options: autocannon.Options, serverPid: number): Promise<Result> {
  const groups = { server: () => withChildren(serverPid), postgres: () => pidsNamed('postgres'), redis: () => pidsNamed('redis-server') };
  const before = { server: cpuMs(groups.server()), postgres: cpuMs(groups.postgres()), redis: cpuMs(groups.redis()), loadgen: process.cpuUsage() };
  const r = await autocannon({ ...options, duration: SECONDS });
  const n = Math.max(1, r.requests.total);
  const perRequest = (ms: number) => Math.round((ms * 1000) / n);
  const loadgen = process.cpuUsage(before.loadgen);
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    cpu: {
      server: perRequest(cpuMs(groups.server()) - before.server),
      postgres: perRequest(cpuMs(groups.postgres()) - before.postgres),
      redis: perRequest(cpuMs(groups.redis()) - before.redis),
      loadgen: Math.round((loadgen.user + loadgen.system) / n),
    },
  };
}

/** Medians over rounds, field by field. */
function summarise(results: Result[]): Result {
  const m = (f: (r: Result) => number) => Math.round(median(results.map(f)));
  return {
    rps: m((r) => r.rps),
    p50: m((r) => r.p50),
    p99: m((r) => r.p99),
    errors: results.reduce((a, r) => a + r.errors, 0),
    non2xx: results.reduce((a, r) => a + r.non2xx, 0),
    cpu: { server: m((r) => r.cpu.server), postgres: m((r) => r.cpu.postgres), redis: m((r) => r.cpu.redis), loadgen: m((r) => r.cpu.loadgen) },
  };
}

async function main() {
  await ensureDatabase(DATABASE_URL);
  const { apiKey, pairs } = await seed();
  const env = {
    NODE_ENV: 'production',
    PORT: String(ASSESS_PORT),
    HOST: '127.0.0.1',
    DATABASE_URL,
    REDIS_URL,
    REDIS_PREFIX: 'kya:bench:',
    LOG_LEVEL: 'warn',
    SERVER_SECRET: 'bench-server-secret-0123456789abcdef0123456789',
    PII_ENCRYPTION_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
    SANCTIONS_WALLET_SOURCE: path.join(ROOT, 'tests/fixtures/sanctions/plain'),
    DEMO_ACCOUNT: '0',
    // Default: one worker per core, how a production host runs it (node:cluster); BENCH_WEB_CONCURRENCY=1 = one process.
    WEB_CONCURRENCY: process.env.BENCH_WEB_CONCURRENCY ?? String(os.availableParallelism()),
  };
  const server = await startProcess('server/main.ts', [], env, ASSESS_PORT);
  const hello = await startProcess('tests/bench/hello.ts', [], { PORT: String(HELLO_PORT) }, HELLO_PORT);
  // Peak RSS of the serving process(es): with workers, the largest worker and the total of supervisor + workers.
  const serverRss = () => {
    const pids = withChildren(server.pid!);
    if (pids.length === 1) return String(peakRssMb(server.pid!));
    const each = pids.slice(1).map(peakRssMb);
    return `${Math.max(...each)} per worker (${pids.map(peakRssMb).reduce((x, y) => x + y, 0)} total)`;
  };
  const policy = { require_kyc: true, require_sanctions_clear: true, min_age: 18, blocked_jurisdictions: ['IR', 'KP', 'CU'] };
  let i = 0;
  const assessOptions = (connections: number): autocannon.Options => ({
    url: `http://127.0.0.1:${ASSESS_PORT}`,
    connections,
    requests: [
      {
        method: 'POST',
        path: '/v1/assess',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        setupRequest: (req) => {
          const [address, signer] = pairs[i++ % pairs.length];
          return { ...req, body: JSON.stringify({ address, policy, signer: { address: signer, network: 'evm' } }) };
        },
      },
    ],
  });
  const rows: string[] = [];
  try {
    // Warm both (JIT, pools, API key cache) before measuring.
    await autocannon({ ...assessOptions(10), duration: 3 });
    await autocannon({ url: `http://127.0.0.1:${HELLO_PORT}/hello`, connections: 10, duration: 2 });
    for (const connections of [10, 50]) {
      // Alternate hello-world and assess rounds so both see the same background noise; report medians.
      const hellos: Result[] = [];
      const assesses: Result[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        hellos.push(await drive({ url: `http://127.0.0.1:${HELLO_PORT}/hello`, connections }, hello.pid!));
        assesses.push(await drive(assessOptions(connections), server.pid!));
      }
      const h = summarise(hellos);
      const a = summarise(assesses);
      const ratio = (a.rps / h.rps).toFixed(2);
      const cpu = (r: Result) => `${r.cpu.server} / ${r.cpu.postgres} / ${r.cpu.redis} / ${r.cpu.loadgen}`;
      rows.push(
        `| ${connections} | hello-world | ${h.rps} | ${h.p50} | ${h.p99} | ${peakRssMb(hello.pid!)} | ${h.errors + h.non2xx} | ${cpu(h)} | |`,
        `| ${connections} | assess | ${a.rps} | ${a.p50} | ${a.p99} | ${serverRss()} | ${a.errors + a.non2xx} | ${cpu(a)} | ${ratio}× |`,
      );
      console.log(`${connections} connections: assess rounds ${assesses.map((r) => r.rps).join(', ')} req/s; hello rounds ${hellos.map((r) => r.rps).join(', ')} req/s`);
    }
  } finally {
    server.kill('SIGTERM');
    hello.kill('SIGTERM');
  }
  console.log(`\nassess benchmark (server WEB_CONCURRENCY=${env.WEB_CONCURRENCY}): medians of ${ROUNDS} alternating rounds of ${SECONDS} s each, ${pairs.length} wallet/signer pairs, policy ${JSON.stringify(policy)}\n`);
  console.log('| connections | target | req/s | p50 ms | p99 ms | peak RSS MB | errors+non-2xx | CPU µs/req server / postgres / redis / load generator | assess / hello |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log('\ntargets: assess ≥ 0.20× hello-world at both concurrencies; p99 ≤ 20 ms @10, ≤ 60 ms @50; peak RSS ≤ 250 MB');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
