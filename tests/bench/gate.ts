// `npm run bench:gate`: a bare Express route vs the same route behind the gate, in the same run on this
// machine — warm cache (every identity already decided) and cold cache (cacheSeconds 0: every request calls
// POST /v1/assess on a live local identity server on PostgreSQL + Redis). Each app runs in its own process,
// driven by autocannon at 10 and 50 connections. Prints req/s, p50, p99 and the ratio to bare. Not a test:
// figures, no asserts. Bare and warm alternate in short rounds so load from other processes hits both alike.
//
// Env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/kya_bench_gate), BENCH_REDIS_URL
// (default redis://127.0.0.1:6379/5), BENCH_SECONDS (default 10).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import autocannon from 'autocannon';
import knexFactory from 'knex';
import express from 'express';
import { createGate, GateCore, parseOptions } from '../../middleware';
import { createBenchMerchant, ensureDatabase, seedOperators, startProcess } from './support';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/kya_bench_gate';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/5';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = 5;
const ROUND_SECONDS = Math.max(2, Math.round((SECONDS * 2) / ROUNDS));
const IDENTITY_PORT = 3321;
const SHOP_PORTS = { bare: 3322, warm: 3323, cold: 3324 } as const;
const OPERATORS = 3000;
const WARM_IDENTITIES = 200;
const POLICY = { requireKyc: true, minAge: 18 as const, blockedJurisdictions: ['IR', 'KP'] };

type ShopMode = keyof typeof SHOP_PORTS;

/** Child mode: one merchant app (bare, or gated with a warm or a disabled cache). */
async function runShop(mode: ShopMode): Promise<void> {
  const app = express();
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  const handler: express.RequestHandler = (_req, res) => void res.json({ ok: true, item: 'espresso' });
  if (mode === 'bare') {
    app.get('/paid', handler);
  } else {
    const gate = createGate({
      apiKey: process.env.BENCH_API_KEY!,
      baseUrl: `http://127.0.0.1:${IDENTITY_PORT}`,
      policy: POLICY,
      cacheSeconds: mode === 'warm' ? 300 : 0,
      // The benchmark measures the decision path (cache, coalescing, assess); per-request wallet proofs are not
      // what it compares, so the wallets are trusted on their header here.
      trustUnsignedWalletHeader: true,
    });
    app.get('/paid', gate, handler);
  }
  app.listen(SHOP_PORTS[mode], '127.0.0.1');
}

/** Verified operators with one claimed wallet each, and one Enterprise merchant (no quota, no rate limit). */
async function seed(): Promise<{ apiKey: string; wallets: string[] }> {
  const db = knexFactory({ client: 'pg', connection: DATABASE_URL });
  try {
    await seedOperators(db, { operators: OPERATORS, walletsPerOperator: 1 });
    const apiKey = await createBenchMerchant(db, { name: 'Bench Shop', tier: 'enterprise' });
    const wallets = (await db('operator_wallets').select('address').orderBy('address')).map((r: { address: string }) => r.address);
    return { apiKey, wallets };
  } finally {
    await db.destroy();
  }
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  /** CPU time (user + system) the app process spent per request served, in µs: immune to scheduling noise. */
  cpuUs: number;
}

const pids: Partial<Record<ShopMode, number>> = {};

/** utime + stime of a process, in clock ticks (/proc/<pid>/stat fields 14 and 15; 100 ticks per second). */
function cpuTicks(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function drive(mode: ShopMode, connections: number, wallets: string[], seconds = SECONDS): Promise<Result> {
  let i = 0;
  const before = cpuTicks(pids[mode]!);
  const r = await autocannon({
    url: `http://127.0.0.1:${SHOP_PORTS[mode]}`,
    connections,
    duration: seconds,
    requests: [
      { method: 'GET', path: '/paid', setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'x-wallet-address': wallets[i++ % wallets.length] } }) },
    ],
  });
  const cpuUs = ((cpuTicks(pids[mode]!) - before) * 10_000) / Math.max(1, r.requests.total);
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, bad: r.errors + r.timeouts + r.non2xx, cpuUs };
}

/** The gate's own work per request on the warm path, timed in this process (no HTTP, no scheduler noise). */
async function measureEvaluate(apiKey: string, wallets: string[]): Promise<number> {
  const core = new GateCore(parseOptions({ apiKey, baseUrl: `http://127.0.0.1:${IDENTITY_PORT}`, policy: POLICY, trustUnsignedWalletHeader: true }));
  try {
    for (const w of wallets) await core.evaluate({}, { 'x-wallet-address': w });
    const n = 200_000;
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const out = core.evaluate({}, { 'x-wallet-address': wallets[i % wallets.length] });
      if (out instanceof Promise) await out; // a miss would show up as a much larger figure
    }
    return Number(process.hrtime.bigint() - started) / n / 1000;
  } finally {
    core.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Per-field median over rounds (req/s, p50, p99); errors summed. */
function medianResult(results: Result[]): Result {
  return {
    rps: Math.round(median(results.map((r) => r.rps))),
    p50: median(results.map((r) => r.p50)),
    p99: median(results.map((r) => r.p99)),
    bad: results.reduce((n, r) => n + r.bad, 0),
    cpuUs: median(results.map((r) => r.cpuUs)),
  };
}

async function main(): Promise<void> {
  await ensureDatabase(DATABASE_URL);
  const { apiKey, wallets } = await seed();
  const identity = await startProcess(
    'server/main.ts',
    [],
    {
      NODE_ENV: 'production',
      PORT: String(IDENTITY_PORT),
      HOST: '127.0.0.1',
      DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX: 'kya:benchgate:',
      LOG_LEVEL: 'warn',
      SERVER_SECRET: 'bench-server-secret-0123456789abcdef0123456789',
      PII_ENCRYPTION_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
      DEMO_ACCOUNT: '0',
    },
    IDENTITY_PORT,
  );
  const shops: ChildProcess[] = [];
  const rows: string[] = [];
  const details: string[] = [];
  let evaluateMicros = 0;
  try {
    for (const mode of Object.keys(SHOP_PORTS) as ShopMode[]) {
      const child = await startProcess('tests/bench/gate.ts', ['shop', mode], { BENCH_API_KEY: apiKey }, SHOP_PORTS[mode]);
      pids[mode] = child.pid;
      shops.push(child);
    }
    const warmSet = wallets.slice(0, WARM_IDENTITIES);
    // Warm-up: JIT, keep-alive pools, and (for the warm shop) one decision per identity in its cache.
    await drive('bare', 10, warmSet, 2);
    await drive('warm', 10, warmSet, 2);
    await drive('cold', 10, wallets, 2);
    for (const connections of [10, 50]) {
      // The machine is shared: bare and warm alternate in short rounds (order flipped each round) so a load
      // spike from elsewhere hits both, and the ratio is the median of the per-round ratios.
      const bare: Result[] = [];
      const warm: Result[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const order: Array<'bare' | 'warm'> = round % 2 === 0 ? ['bare', 'warm'] : ['warm', 'bare'];
        for (const mode of order) (mode === 'bare' ? bare : warm).push(await drive(mode, connections, warmSet, ROUND_SECONDS));
      }
      const cold = await drive('cold', connections, wallets);
      const b = medianResult(bare);
      const w = medianResult(warm);
      const ratios = warm.map((r, k) => r.rps / bare[k].rps);
      const warmRatio = median(ratios);
      details.push(
        `${connections} connections, per-round warm/bare: ${ratios.map((x) => (x * 100).toFixed(1) + ' %').join(', ')} (bare req/s ${bare.map((r) => r.rps).join(', ')})`,
      );
      const row = (name: string, r: Result, ratio: number) =>
        `| ${connections} | ${name} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.bad} | ${(ratio * 100).toFixed(1)} % | ${r.cpuUs.toFixed(0)} | ${((b.cpuUs / r.cpuUs) * 100).toFixed(1)} % |`;
      rows.push(row('bare route', b, 1), row('gate, warm cache', w, warmRatio), row('gate, cold cache (assess every request)', cold, cold.rps / b.rps));
    }
    evaluateMicros = await measureEvaluate(apiKey, warmSet);
  } finally {
    for (const s of shops) s.kill('SIGTERM');
    identity.kill('SIGTERM');
  }
  console.log(
    `\ngate benchmark: bare and warm alternate in ${ROUNDS} rounds of ${ROUND_SECONDS} s (medians; ratio = median of per-round ratios); cold ${SECONDS} s; warm = ${WARM_IDENTITIES} wallet identities already cached; cold = ${wallets.length} identities, cacheSeconds 0, every request calls POST /v1/assess (policy ${JSON.stringify(POLICY)})\n`,
  );
  console.log('| connections | route | req/s | p50 ms | p99 ms | errors+non-2xx | req/s of bare | app CPU µs/req | CPU capacity of bare |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log('');
  for (const d of details) console.log(d);
  console.log(`in-process: a warm-cache evaluate() (identity header → cached decision) costs ${evaluateMicros.toFixed(2)} µs`);
  console.log('\ntarget: gate with a warm cache ≥ 90 % of the bare route');
}

if (process.argv[2] === 'shop') {
  void runShop(process.argv[3] as ShopMode);
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
