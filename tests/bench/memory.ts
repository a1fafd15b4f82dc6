// `npm run bench:memory`: resident memory of the embedded server (`npm start` with nothing set: PGlite and
// in-process stores) right after start and after 1,000 POST /v1/assess calls (wallet mode, a new address
// and a policy each time, so every call does database work and queues a reputation score). Prints one JSON
// line; exits 1 when the final RSS is over the budget (MEMORY_BUDGET_MB, default 300).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const CALLS = Number(process.env.MEMORY_CALLS ?? 1000);
const CONCURRENCY = 8;
const BUDGET_MB = Number(process.env.MEMORY_BUDGET_MB ?? 300);

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** VmRSS and VmHWM (peak) of a process, in MB, from /proc. */
function rss(pid: number): { rss_mb: number; peak_mb: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { rss_mb: Math.round(kb('VmRSS') / 1024), peak_mb: Math.round(kb('VmHWM') / 1024) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function randomAddress(): string {
  return '0x' + [...crypto.getRandomValues(new Uint8Array(20))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function main() {
  const port = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kya-memory-'));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  };
  // The node flags of `npm start` (package.json), so the figure is the one a user gets; MEMORY_NODE_FLAGS
  // replaces them to compare (e.g. MEMORY_NODE_FLAGS=" " for V8's defaults).
  const startScript = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
  const flags = (
    process.env.MEMORY_NODE_FLAGS ??
    startScript
      .split(' ')
      .filter((a) => a.startsWith('--') && a !== '--import')
      .join(' ')
  )
    .split(' ')
    .filter(Boolean);
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', 'server/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  try {
    const deadline = Date.now() + 120_000;
    while (!/as_live_\w+/.test(output)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start:\n${output}`);
      await sleep(200);
    }
    const apiKey = /as_live_\w+/.exec(output)![0];
    await sleep(2000); // let start-up work (first jobs, JIT) settle before the first figure
    const afterStart = rss(child.pid!);

    const base = `http://127.0.0.1:${port}`;
    const assess = () =>
      fetch(`${base}/v1/assess`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': apiKey },
        body: JSON.stringify({ address: randomAddress(), policy: { require_kyc: true, min_age: 18, blocked_jurisdictions: ['KP', 'IR'] } }),
      });
    let done = 0;
    let failed = 0;
    const failures: Record<string, number> = {};
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (done + failed < CALLS) {
          const n = done + failed;
          if (n >= CALLS) break;
          done++;
          let res = await assess();
          // Paid-tier per-second limit: wait as told and send the same call again (not a failure of the server).
          while (res.status === 429) {
            await res.arrayBuffer();
            await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
            res = await assess();
          }
          if (res.status === 200) await res.arrayBuffer();
          if (res.status !== 200) {
            done--;
            failed++;
            const body = (await res
              .clone()
              .json()
              .catch(() => ({}))) as { error?: { code?: string } };
            const key = `${res.status} ${body.error?.code ?? ''}`.trim();
            failures[key] = (failures[key] ?? 0) + 1;
          }
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    await sleep(3000); // queued reputation scores run in-process after the responses
    const afterCalls = rss(child.pid!);
    const result = {
      calls: CALLS,
      ok: done,
      failed,
      ...(failed ? { failures } : {}),
      seconds: Math.round(seconds * 10) / 10,
      rss_after_start_mb: afterStart.rss_mb,
      rss_after_calls_mb: afterCalls.rss_mb,
      peak_rss_mb: afterCalls.peak_mb,
      budget_mb: BUDGET_MB,
    };
    process.stdout.write(JSON.stringify({ ...result, node_flags: flags.join(' ') }) + '\n');
    if (failed > 0 || afterCalls.rss_mb > BUDGET_MB) process.exitCode = 1;
  } finally {
    // A server that already exited (a failed start) emits no second 'exit': waiting for one would let the
    // event loop drain and end this script silently with status 0.
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`bench:memory failed: ${(err as Error).message}\n`);
  process.exit(1);
});
