// Shared plumbing of the benchmark scripts: the servers under test run as separate processes from the
// compiled JavaScript in dist/ (`npm run build`), as they would in production, never through a TS loader.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { displayPrefix, newSecret, sha256Hex } from '../../server/crypto';
import { migrationSource } from '../../server/db/migrations';

export const ROOT = path.resolve(__dirname, '../..');

/** dist/ path of a TypeScript entry point; fails clearly when `npm run build` has not been run. */
export function compiledEntry(tsPath: string): string {
  const js = path.join(ROOT, 'dist', tsPath.replace(/\.ts$/, '.js'));
  if (!fs.existsSync(js)) throw new Error(`${js} is missing: run \`npm run build\` first (the bench:* scripts do)`);
  return js;
}

/** Starts `node dist/<entry>.js [...args]` and resolves once GET /healthz on `port` answers 200. */
export function startProcess(entry: string, args: string[], env: Record<string, string>, port: number): Promise<ChildProcess> {
  // BENCH_CPU_PROF=dir writes a V8 CPU profile of each process to that directory (for finding hot spots).
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...prof, compiledEntry(entry), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 60_000;
    const poll = async () => {
      if (child.exitCode !== null) return reject(new Error(`${entry} exited: ${output}`));
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return resolve(child);
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) return reject(new Error(`${entry} did not start: ${output}`));
      setTimeout(() => void poll(), 200);
    };
    void poll();
  });
}

/** Peak resident set size of a process (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Creates the benchmark database when it does not exist. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const admin = new URL(databaseUrl);
  const name = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
  if (exists.rowCount === 0) await client.query(`create database "${name.replace(/"/g, '')}"`);
  await client.end();
}

/** CPU time (user + system) consumed so far by the given processes, in ms (from /proc/<pid>/stat). */
export function cpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    } catch {
      /* the process ended */
    }
  }
  return ticks * 10; // USER_HZ = 100 on Linux
}

/** PIDs whose command name (/proc/<pid>/comm) starts with `name` (e.g. all PostgreSQL backends). */
export function pidsNamed(name: string): number[] {
  return fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return fs.readFileSync(`/proc/${d}/comm`, 'utf8').startsWith(name);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Median of numbers (robust to the noisy rounds of a shared 2-core VM). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Resets the bench database and seeds `operators` verified operators (US/DE/FR/BR/GB, 21+ or, with
 * `mixedAges`, every fourth 18+) with `walletsPerOperator` claimed EVM wallets each, all already known.
 */
export async function seedOperators(db: Knex, options: { operators: number; walletsPerOperator: number; mixedAges?: boolean }): Promise<void> {
  await db.migrate.latest({ migrationSource: migrationSource(), tableName: 'knex_migrations' });
  await db.raw('truncate accounts, known_addresses, sanctions_wallet_lists restart identity cascade');
  const age = options.mixedAges ? `case when g % 4 = 0 then '18+' else '21+' end` : `'21+'`;
  await db.raw(
    `insert into accounts (kind, name, kyc_status, kyc_verified_at, operator_type, jurisdiction, age_bracket, age_verified,
       sanctions_status, sanctions_checked_at, verification_level)
     select 'operator', 'bench operator ' || g, 'verified', now() - interval '30 days', 'individual',
       (array['US','DE','FR','BR','GB'])[1 + g % 5], ${age}, true, 'clear', now() - interval '5 days', 'kyc_verified'
     from generate_series(1, ?) g`,
    [options.operators],
  );
  await db.raw(
    `insert into operator_wallets (account_id, network, address, claimed_at)
     select a.id, 'evm', '0x' || substr(md5(a.id::text || ':' || w), 1, 32) || substr(md5(w || ':' || a.id::text), 1, 8),
       now() - (w || ' days')::interval
     from accounts a cross join generate_series(1, ?) w where a.kind = 'operator'`,
    [options.walletsPerOperator],
  );
  await db.raw('insert into known_addresses (address, network) select address, network from operator_wallets');
}

/** A merchant account with one API key (returned in plain text, stored hashed like the server does). */
export async function createBenchMerchant(db: Knex, account: Record<string, unknown>): Promise<string> {
  const [merchant] = await db('accounts')
    .insert({ kind: 'merchant', ...account })
    .returning<Array<{ id: string }>>('id');
  const apiKey = newSecret('as_live_', 32);
  await db('api_keys').insert({ account_id: merchant.id, key_hash: sha256Hex(apiKey), prefix: displayPrefix(apiKey) });
  await db.raw('analyze');
  return apiKey;
}

/** `pid` and its direct children (cluster workers), from /proc/<pid>/stat's ppid field. */
export function withChildren(pid: number): number[] {
  const children = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
  return [pid, ...children];
}
