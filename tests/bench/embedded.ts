// `npm run bench:embedded`: POST /v1/assess in embedded mode (`npm start` without DATABASE_URL / REDIS_URL:
// PGlite + in-process stores, one process) against a plain Express hello-world route, at 10 and 50
// connections, all-hit and a 90/10 hit/miss mix, on 1,000 operators with 3,000 claimed wallets seeded into a
// fresh data directory. Prints req/s, p50, p99, CPU per request, the ratio to hello-world, and the server's
// RSS after 1,000 assess calls and at the end. Not a test: figures, no asserts.
//
// Env: BENCH_SECONDS (default 10), BENCH_ROUNDS (default 3).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../../server/config';
import { createDb } from '../../server/db/knex';
import { cpuMs, createBenchMerchant, median, peakRssMb, seedOperators, startProcess, withChildren } from './support';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PORT = 3331;
const HELLO_PORT = 3332;
const HIT_PAIRS = 200;
const SECRETS = {
  SERVER_SECRET: 'bench-server-secret-0123456789abcdef0123456789',
  PII_ENCRYPTION_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
};

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
}

async function seed(dataDir: string): Promise<{ apiKey: string; pairs: Array<[string, string]> }> {
  const config = loadConfig({ DATA_DIR: dataDir, ...SECRETS, DEMO_ACCOUNT: '0', LOG_LEVEL: 'warn' });
  const db = createDb(config);
  try {
    await seedOperators(db, { operators: 1000, walletsPerOperator: 3 });
    const apiKey = await createBenchMerchant(db, { name: 'Bench Merchant', tier: 'paid', quota_override: 1_000_000_000, rps_override: 1_000_000 });
    const { rows } = await db.raw<{ rows: Array<{ address: string }> }>(`select address from operator_wallets order by account_id, claimed_at`);
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i + 1 < rows.length; i += 3) pairs.push([rows[i].address, rows[i + 1].address]);
    return { apiKey, pairs };
  } finally {
    await db.destroy();
  }
}

interface Result {
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  cpu: number;
}

async function drive(options: autocannon.Options, pid: number): Promise<Result> {
  const before = cpuMs(withChildren(pid));
  const r = await autocannon({ ...options, duration: SECONDS });
  const n = Math.max(1, r.requests.total);
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    bad: r.errors + r.timeouts + r.non2xx,
    cpu: Math.round(((cpuMs(withChildren(pid)) - before) * 1000) / n),
  };
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-bench-embedded-'));
  const { apiKey, pairs } = await seed(dataDir);
  const hitPairs = pairs.slice(0, HIT_PAIRS);
  const missPairs = pairs.slice(HIT_PAIRS);
  const server = await startProcess(
    'server/main.ts',
    [],
    { DATA_DIR: dataDir, ...SECRETS, PORT: String(PORT), HOST: '127.0.0.1', DEMO_ACCOUNT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '', REDIS_URL: '' },
    PORT,
  );
  const hello = await startProcess('tests/bench/hello.ts', [], { PORT: String(HELLO_PORT) }, HELLO_PORT);
  const policy = { require_kyc: true, require_sanctions_clear: true, min_age: 18, blocked_jurisdictions: ['IR', 'KP', 'CU'] };
  let hit = 0;
  let miss = 0;
  let n = 0;
  const assessOptions = (connections: number, missEvery: number | null, amount?: number): autocannon.Options => ({
    url: `http://127.0.0.1:${PORT}`,
    connections,
    amount,
    requests: [
      {
        method: 'POST',
        path: '/v1/assess',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        setupRequest: (req) => {
          const isMiss = missEvery !== null && ++n % missEvery === 0;
          const [address, signer] = isMiss ? missPairs[miss++ % missPairs.length] : hitPairs[hit++ % hitPairs.length];
          return { ...req, body: JSON.stringify({ address, policy, signer: { address: signer, network: 'evm' } }) };
        },
      },
    ],
  });
  const rows: string[] = [];
  let rssAfter1000 = 0;
  try {
    await autocannon(assessOptions(10, 10, 1000));
    rssAfter1000 = rssMb(server.pid!);
    await autocannon({ url: `http://127.0.0.1:${HELLO_PORT}/hello`, connections: 10, duration: 2 });
    const targets: Array<{ name: string; pid: number; options: (c: number) => autocannon.Options }> = [
      { name: 'Express hello-world', pid: hello.pid!, options: (c) => ({ url: `http://127.0.0.1:${HELLO_PORT}/hello`, connections: c }) },
      { name: 'kya assess embedded, all-hit', pid: server.pid!, options: (c) => assessOptions(c, null) },
      { name: 'kya assess embedded, 90/10 hit/miss', pid: server.pid!, options: (c) => assessOptions(c, 10) },
    ];
    for (const connections of [10, 50]) {
      const results = targets.map(() => [] as Result[]);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, t] of targets.entries()) results[i].push(await drive(t.options(connections), t.pid));
      }
      const m = (rs: Result[], f: (r: Result) => number) => Math.round(median(rs.map(f)));
      const base = m(results[0], (r) => r.rps);
      for (const [i, t] of targets.entries()) {
        const rs = results[i];
        const rps = m(rs, (r) => r.rps);
        rows.push(
          `| ${connections} | ${t.name} | ${rps} | ${m(rs, (r) => r.p50)} | ${m(rs, (r) => r.p99)} | ${rs.reduce((a, r) => a + r.bad, 0)} | ${m(rs, (r) => r.cpu)} | ${(rps / base).toFixed(2)}× |`,
        );
      }
    }
  } finally {
    const rssEnd = rssMb(server.pid!);
    const peak = peakRssMb(server.pid!);
    server.kill('SIGTERM');
    hello.kill('SIGTERM');
    const [l1, l5, l15] = os.loadavg();
    console.log(
      `\nembedded benchmark: medians of ${ROUNDS} rotated rounds of ${SECONDS} s; ${hitPairs.length} hit pairs, ${missPairs.length} miss pairs; load average at the end ${l1.toFixed(2)} / ${l5.toFixed(2)} / ${l15.toFixed(2)}\n`,
    );
    console.log('| connections | target | req/s | p50 ms | p99 ms | errors+non-2xx | server CPU µs/req | × hello |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(`\nserver RSS: ${rssAfter1000} MB after 1,000 assess calls, ${rssEnd} MB at the end, peak ${peak} MB`);
    console.log('targets: ≥ 0.15× hello-world; ≤ 300 MB RSS after 1,000 assess calls');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
