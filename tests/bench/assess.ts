// `npm run bench:assess`: POST /v1/assess (wallet mode, a policy and a payment signer) against a plain Express
// hello-world JSON route and two bare node:http ceilings (one indexed row + one Redis INCR; everything in
// memory), all as separate server processes on this machine, driven by autocannon at 10 and 50 connections.
// kya runs as one process and as one worker per core, on PostgreSQL + Redis with 10,000 operators and 30,000
// claimed wallets, in two mixes: all-hit (500 wallet/signer pairs, cached after warm-up) and 90/10 (every tenth
// request a pair not seen for longer than the identity cache TTL: a miss). Prints req/s, p50, p99, peak RSS,
// CPU per request and the ratio to hello-world. Not a test: figures, no asserts.
//
// Env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/kya_bench_assess), BENCH_REDIS_URL
// (default redis://127.0.0.1:6379/2), BENCH_SECONDS (default 10), BENCH_ROUNDS (default 3).
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
const CEILING_DB_PORT = 3313;
const CEILING_MEMORY_PORT = 3314;
const WORKERS_PORT = 3315;
const HIT_PAIRS = 500;

/** Seeds operators with three claimed wallets each (all already known), and one Paid merchant. */
async function seed(): Promise<{ apiKey: string; pairs: Array<[string, string]> }> {
  const db = knexFactory({ client: 'pg', connection: DATABASE_URL });
  try {
    await seedOperators(db, { operators: OPERATORS, walletsPerOperator: WALLETS_PER_OPERATOR, mixedAges: true });
    const apiKey = await createBenchMerchant(db, { name: 'Bench Merchant', tier: 'paid', quota_override: 1_000_000_000, rps_override: 1_000_000 });
    const rows = (
      await db.raw<{ rows: Array<{ account_id: string; address: string }> }>(`select account_id, address from operator_wallets order by account_id, claimed_at`)
    ).rows;
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i + 1 < rows.length; i += 3) pairs.push([rows[i].address, rows[i + 1].address]);
    const counts = (
      await db.raw<{ rows: Array<{ operators: string; wallets: string }> }>(
        `select (select count(*) from accounts where kind = 'operator') as operators, (select count(*) from operator_wallets) as wallets`,
      )
    ).rows[0];
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
  const hitPairs = pairs.slice(0, HIT_PAIRS);
  const missPairs = pairs.slice(HIT_PAIRS);
  const env = {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    DATABASE_URL,
    REDIS_URL,
    REDIS_PREFIX: 'kya:bench:',
    LOG_LEVEL: 'warn',
    SERVER_SECRET: 'bench-server-secret-0123456789abcdef0123456789',
    PII_ENCRYPTION_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
    SANCTIONS_WALLET_SOURCE: path.join(ROOT, 'tests/fixtures/sanctions/plain'),
    DEMO_ACCOUNT: '0',
  };
  const cores = os.availableParallelism();
  const single = await startProcess('server/main.ts', [], { ...env, PORT: String(ASSESS_PORT), WEB_CONCURRENCY: '1' }, ASSESS_PORT);
  const workers = await startProcess('server/main.ts', [], { ...env, PORT: String(WORKERS_PORT), WEB_CONCURRENCY: String(cores) }, WORKERS_PORT);
  const hello = await startProcess('tests/bench/hello.ts', [], { PORT: String(HELLO_PORT) }, HELLO_PORT);
  const ceilingDb = await startProcess(
    'tests/bench/ceiling.ts',
    [],
    { PORT: String(CEILING_DB_PORT), CEILING_MODE: 'db', DATABASE_URL, REDIS_URL },
    CEILING_DB_PORT,
  );
  const ceilingMemory = await startProcess(
    'tests/bench/ceiling.ts',
    [],
    { PORT: String(CEILING_MEMORY_PORT), CEILING_MODE: 'memory', DATABASE_URL },
    CEILING_MEMORY_PORT,
  );
  const children = [single, workers, hello, ceilingDb, ceilingMemory];
  // Peak RSS of the serving process(es): with workers, the largest worker and the total of supervisor + workers.
  const rss = (pid: number) => {
    const pids = withChildren(pid);
    if (pids.length === 1) return String(peakRssMb(pid));
    const each = pids.slice(1).map(peakRssMb);
    return `${Math.max(...each)} per worker (${pids.map(peakRssMb).reduce((x, y) => x + y, 0)} total)`;
  };
  const policy = { require_kyc: true, require_sanctions_clear: true, min_age: 18, blocked_jurisdictions: ['IR', 'KP', 'CU'] };
  let hit = 0;
  let miss = 0;
  let n = 0;
  const postOptions = (port: number, connections: number, missEvery: number | null, withKey = true): autocannon.Options => ({
    url: `http://127.0.0.1:${port}`,
    connections,
    requests: [
      {
        method: 'POST',
        path: '/v1/assess',
        headers: withKey ? { 'content-type': 'application/json', 'x-api-key': apiKey } : { 'content-type': 'application/json' },
        setupRequest: (req) => {
          const isMiss = missEvery !== null && ++n % missEvery === 0;
          const [address, signer] = isMiss ? missPairs[miss++ % missPairs.length] : hitPairs[hit++ % hitPairs.length];
          return { ...req, body: JSON.stringify({ address, policy, signer: { address: signer, network: 'evm' } }) };
        },
      },
    ],
  });
  const targets: Array<{ name: string; pid: number; options: (c: number) => autocannon.Options }> = [
    { name: 'Express hello-world', pid: hello.pid!, options: (c) => ({ url: `http://127.0.0.1:${HELLO_PORT}/hello`, connections: c }) },
    { name: 'ceiling: node:http + 1 indexed row + 1 INCR', pid: ceilingDb.pid!, options: (c) => postOptions(CEILING_DB_PORT, c, null, false) },
    { name: 'ceiling: node:http, all in memory', pid: ceilingMemory.pid!, options: (c) => postOptions(CEILING_MEMORY_PORT, c, null, false) },
    { name: 'kya assess, 1 process, all-hit', pid: single.pid!, options: (c) => postOptions(ASSESS_PORT, c, null) },
    { name: 'kya assess, 1 process, 90/10 hit/miss', pid: single.pid!, options: (c) => postOptions(ASSESS_PORT, c, 10) },
    { name: `kya assess, ${cores} workers, all-hit`, pid: workers.pid!, options: (c) => postOptions(WORKERS_PORT, c, null) },
    { name: `kya assess, ${cores} workers, 90/10 hit/miss`, pid: workers.pid!, options: (c) => postOptions(WORKERS_PORT, c, 10) },
  ];
  const rows: string[] = [];
  try {
    // Warm every target (JIT, pools, API key and identity caches) before measuring.
    for (const t of targets) await autocannon({ ...t.options(10), duration: 3 });
    for (const connections of [10, 50]) {
      // Rotate through the targets each round so all see the same background noise; report medians.
      const results = targets.map(() => [] as Result[]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, t] of targets.entries()) results[i].push(await drive(t.options(connections), t.pid));
      }
      const summaries = results.map(summarise);
      const base = summaries[0].rps;
      const cpu = (r: Result) => `${r.cpu.server} / ${r.cpu.postgres} / ${r.cpu.redis} / ${r.cpu.loadgen}`;
      for (const [i, t] of targets.entries()) {
        const r = summaries[i];
        rows.push(
          `| ${connections} | ${t.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${rss(t.pid)} | ${r.errors + r.non2xx} | ${cpu(r)} | ${(r.rps / base).toFixed(2)}× |`,
        );
      }
      console.log(`${connections} connections done: ${summaries.map((r, i) => `${targets[i].name} ${r.rps}`).join('; ')}`);
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
  }
  const [l1, l5, l15] = os.loadavg();
  console.log(
    `\nassess benchmark: medians of ${ROUNDS} rotated rounds of ${SECONDS} s each; ${hitPairs.length} hit pairs, ${missPairs.length} miss pairs; policy ${JSON.stringify(policy)}; ${cores} cores; load average at the end ${l1.toFixed(2)} / ${l5.toFixed(2)} / ${l15.toFixed(2)}\n`,
  );
  console.log(
    '| connections | target | req/s | p50 ms | p99 ms | peak RSS MB | errors+non-2xx | CPU µs/req server / postgres / redis / load generator | × hello |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log('\ntargets: 1 process all-hit ≥ 0.45× hello (p99 ≤ 8 ms @10, ≤ 25 ms @50); 90/10 ≥ 0.35×; one worker per core ≥ 0.55×');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
