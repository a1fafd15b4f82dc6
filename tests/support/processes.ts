// Spawning the real entry points (`npx tsx server/main.ts`, `npx tsx server/cli/admin.ts`, `npm run migrate`)
// with a controlled environment, for end-to-end tests of the two run modes, the admin CLI and shutdown.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../..');

/** Only what a child needs to find node/npm: no DATABASE_URL/REDIS_URL leaks in from the test's own env. */
export function baseEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'test', LOG_LEVEL: 'warn' };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `npx tsx server/cli/admin.ts ...args`; parses stdout as JSON when the command succeeded. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the CLI's JSON output; tests assert its shape
export async function admin(args: string[], env: NodeJS.ProcessEnv): Promise<RunResult & { json: any }> {
  const result = await run('npx', ['tsx', 'server/cli/admin.ts', ...args], env);
  let json: unknown = null;
  // Success: stdout is exactly one JSON document. Failure: the error document is the last thing on stderr
  // (after npm notices and one-line JSON log records).
  const text = result.code === 0 ? result.stdout : result.stderr.slice(result.stderr.lastIndexOf('{\n  "error"'));
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  return { ...result, json };
}

export interface ServerProcess {
  child: ChildProcess;
  output(): string;
  /** Resolves with the output once `pattern` appears; rejects if the process exits or time runs out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

const running = new Set<ChildProcess>();

/**
 * Starts the server exactly as `npm start` does: `node --import tsx server/main.ts`, one process, so SIGTERM
 * reaches the server itself. (Under the `tsx` CLI wrapper a second process relays signals and SIGKILLs the
 * server when it does not acknowledge within ~30 ms — under load that cuts graceful shutdown short; the
 * npx wrapper does not forward SIGTERM at all.) It runs in its own process group so a stray one can be
 * killed with everything it started.
 */
export function startServer(env: NodeJS.ProcessEnv, entry = 'server/main.ts'): ServerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child);
  child.on('exit', () => running.delete(child));
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let done = false;
  void exited.then(() => {
    done = true;
    for (const l of listeners) l();
  });
  return {
    child,
    output: () => out,
    exited,
    kill: (signal = 'SIGTERM') => {
      if (!done) signalGroup(child, signal);
    },
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`timed out waiting for ${pattern}; output:\n${out}`)), timeoutMs);
        const check = () => {
          const m = out.match(pattern);
          if (m) finish(null, m);
          else if (done) finish(new Error(`process exited before ${pattern}; output:\n${out}`));
        };
        const finish = (err: Error | null, m?: RegExpMatchArray) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (err) reject(err);
          else resolve(m!);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    /* already gone */
  }
}

/** Safety net for afterAll: SIGKILLs every server this test file started that is still running. */
export function killStrayServers() {
  for (const child of running) signalGroup(child, 'SIGKILL');
}
