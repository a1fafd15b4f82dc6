// `npm run bench:gate-cold`: the gate's own CPU per cold request, in process. 3,000 `evaluate()` calls, 10 at a
// time, each for a wallet whose decision is not cached (cacheSeconds 0), so each calls POST /v1/assess on a live
// local identity server (PostgreSQL + Redis, its own process). Prints process CPU (user + system) per call, which
// is only this process: the identity server, the database and the load are elsewhere. Not a test: figures, no
// asserts. CPU per call rises with the load other processes put on the machine, so compare alternating runs.
//
// Env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/kya_bench_gate), BENCH_REDIS_URL
// (default redis://127.0.0.1:6379/5), BENCH_PORT (default 3341), BENCH_CALLS (default 3000),
// BENCH_PROFILE=<file>: write a CPU profile of the measured calls (summarise with `npm run bench:profile`).
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import knexFactory from 'knex';
import { GateCore, parseOptions } from '../../middleware';
import { createBenchMerchant, ensureDatabase, seedOperators, startProcess } from './support';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/kya_bench_gate';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/5';
const PORT = Number(process.env.BENCH_PORT ?? 3341);
const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const CONCURRENCY = 10;
const OPERATORS = 3000;

async function main(): Promise<void> {
  await ensureDatabase(DATABASE_URL);
  const db = knexFactory({ client: 'pg', connection: DATABASE_URL });
  let apiKey: string;
  let wallets: string[];
  try {
    await seedOperators(db, { operators: OPERATORS, walletsPerOperator: 1 });
    apiKey = await createBenchMerchant(db, { name: 'Bench Shop', tier: 'enterprise' });
    wallets = (await db('operator_wallets').select('address').orderBy('address')).map((r: { address: string }) => r.address);
  } finally {
    await db.destroy();
  }
  const server = await startProcess(
    'server/main.ts',
    [],
    {
      NODE_ENV: 'production',
      PORT: String(PORT),
      HOST: '127.0.0.1',
      DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX: 'kya:benchgatecold:',
      LOG_LEVEL: 'warn',
      SERVER_SECRET: 'bench-server-secret-0123456789abcdef0123456789',
      PII_ENCRYPTION_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
      DEMO_ACCOUNT: '0',
    },
    PORT,
  );
  const core = new GateCore(
    parseOptions({ apiKey, baseUrl: `http://127.0.0.1:${PORT}`, policy: { requireKyc: true, minAge: 18 }, cacheSeconds: 0, trustUnsignedWalletHeader: true }),
  );
  try {
    let next = 0;
    const one = async () => {
      const wallet = wallets[next++ % wallets.length];
      const headers = { 'x-wallet-address': wallet };
      await core.evaluate({ headers, method: 'GET', url: '/paid' }, headers, '/paid');
    };
    const run = async (calls: number) => {
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          for (let k = 0; k < calls / CONCURRENCY; k++) await one();
        }),
      );
    };
    await run(500); // warm-up: JIT, keep-alive sockets, the server's caches
    const session = new Session();
    if (process.env.BENCH_PROFILE) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await run(CALLS);
    const cpu = process.cpuUsage(cpu0);
    const seconds = (performance.now() - t0) / 1000;
    if (process.env.BENCH_PROFILE) {
      const { profile } = await session.post('Profiler.stop');
      fs.writeFileSync(process.env.BENCH_PROFILE, JSON.stringify(profile));
    }
    const per = (us: number) => (us / CALLS).toFixed(0);
    console.log(
      `cold evaluate(): ${per(cpu.user + cpu.system)} µs CPU per call (user ${per(cpu.user)}, system ${per(cpu.system)}), ${(CALLS / seconds).toFixed(0)} calls/s, ${CALLS} calls, ${CONCURRENCY} at a time`,
    );
  } finally {
    core.close();
    server.kill('SIGTERM');
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
