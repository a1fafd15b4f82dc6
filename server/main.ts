// Entry point (`npm start`): one serving process, or with WEB_CONCURRENCY > 1 a supervisor and that many
// workers. The supervisor loads only configuration and node:cluster; the app is loaded by serving processes.
import cluster from 'node:cluster';
import { loadConfig, ConfigError, type Config } from './config';

/**
 * WEB_CONCURRENCY > 1: this process only supervises — it forks that many workers that share the listening
 * port (node:cluster), replaces a worker that dies unexpectedly, and forwards SIGTERM/SIGINT so every worker
 * drains and stops gracefully. All shared state (limits, quotas, cache invalidation, jobs) is in Redis and
 * PostgreSQL, so workers behave like instances behind a load balancer.
 */
function supervise(config: Config): void {
  let stopping = false;
  const listening = new Set<number>();
  const fork = () => cluster.fork();
  cluster.on('listening', (worker) => listening.add(worker.id));
  for (let i = 0; i < config.webConcurrency; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    if (!listening.has(worker.id)) {
      // Died before serving (bad config, migrations behind, database unreachable): restarting would loop.
      stopping = true;
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      process.exitCode = code || 1;
      return;
    }
    process.stderr.write(`kya worker ${worker.process.pid} exited (${signal ?? code}); starting a replacement\n`);
    setTimeout(fork, 1000).unref();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    setTimeout(() => process.exit(1), config.shutdownTimeoutMs + 1000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

function fail(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`kya failed to start: ${(err as Error).message}\n`);
  }
  process.exit(1);
}

if (require.main === module) {
  let config: Config | undefined;
  try {
    config = loadConfig();
  } catch (err) {
    fail(err);
  }
  if (cluster.isPrimary && config.webConcurrency > 1) supervise(config);
  else {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a cluster primary never loads the server it supervises
    const { start } = require('./serve') as typeof import('./serve');
    start(config).catch(fail);
  }
}
