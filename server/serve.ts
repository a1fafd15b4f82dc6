// One serving process: loadConfig → create db/redis/stores → prepare the database → createApp(deps) → listen.
// SIGTERM/SIGINT: stop accepting, let in-flight requests finish, flush write-behind buffers, close pools.
import type { Server } from 'node:http';
import { loadConfig, type Config } from './config';
import { createDeps, type Deps } from './deps';
import { createApp } from './app';
import { ensureDemoAccount, prepareDatabase } from './bootstrap';
import { formatAge } from './sanctions/freshness';
import { startAdminChannel } from './cli/channel';

export interface StartOptions {
  /** Runs after the database is ready, before listening; its text is printed once the server listens. */
  seed?: (deps: Deps) => Promise<string>;
}

export async function start(config: Config = loadConfig(), options: StartOptions = {}): Promise<{ deps: Deps; server: Server }> {
  const deps = await createDeps(config);
  await prepareDatabase(deps);
  const seeded = options.seed ? await options.seed(deps) : null;
  const demo = seeded === null ? await ensureDemoAccount(deps) : null;
  await deps.lifecycle.start();
  const app = createApp(deps);
  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  server.keepAliveTimeout = 65_000; // longer than typical load-balancer idle timeouts
  server.headersTimeout = 66_000; // must exceed keepAliveTimeout (Node closes the socket otherwise)
  server.requestTimeout = 30_000; // a client trickling a body cannot hold a connection for Node's default 5 min
  const address = server.address();
  const port = address && typeof address === 'object' ? address.port : config.port;
  if (config.mode === 'embedded') {
    // The admin CLI's way in while this process holds the data directory; closed first at shutdown.
    const channel = await startAdminChannel(deps);
    deps.lifecycle.onStop('admin channel', () => channel.close());
  }
  deps.logger.info({ port, mode: config.mode, redis: Boolean(config.redisUrl) }, 'kya identity server listening');
  process.stdout.write(sanctionsBanner(deps));
  if (demo) {
    const line = '='.repeat(72);
    process.stdout.write(
      `\n${line}\n kya demo merchant created (Paid tier). Its API key is shown ONCE:\n\n   export KYA_API_KEY=${demo.apiKey}\n\n` +
        ` Try:  curl -s ${config.publicBaseUrl}/healthz\n${line}\n\n`,
    );
  }
  if (seeded) process.stdout.write(seeded);
  installShutdown(deps, server);
  return { deps, server };
}

/** One line per sanctions list: what is loaded, from where, and how old it is. */
function sanctionsBanner(deps: Deps): string {
  const lines = [deps.services.walletSanctions.freshness(), deps.services.screening.freshness()].map((f) => {
    const what = f.list === 'wallets' ? 'wallet addresses' : 'listed parties';
    if (f.status === 'unavailable') return ` sanctions ${f.list}: UNAVAILABLE (${f.reason}); source ${f.source ?? 'none'}`;
    const age = `${f.as_of!.slice(0, 10)}, ${formatAge(f.age_seconds!)} old`;
    return ` sanctions ${f.list}: ${f.entries} ${what} as of ${age}; source ${f.source}${f.status === 'stale' ? ` (STALE: ${f.reason})` : ''}`;
  });
  return `${lines.join('\n')}\n`;
}

function installShutdown(deps: Deps, server: Server) {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    deps.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      deps.logger.error('shutdown timed out; exiting');
      setTimeout(() => process.exit(1), 200); // see below: let the log write settle first
    }, deps.config.shutdownTimeoutMs);
    force.unref();
    await new Promise<void>((resolve) => {
      // Stop accepting; in-flight requests finish. Keep-alive sockets that finish a request afterwards
      // become idle and are closed on the next sweep, so close() does not wait for the client to hang up.
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      server.close(() => {
        clearInterval(sweep);
        resolve();
      });
      server.closeIdleConnections();
    });
    await deps.lifecycle.stop(deps.logger);
    deps.logger.info('stopped');
    // Give the asynchronous log writes a moment to land (or to fail with EPIPE when whoever read our stdout
    // is gone): exiting with writes still pending makes pino flush synchronously at exit, and sonic-boom's
    // synchronous flush retries a broken pipe forever, so the process would never exit.
    deps.logger.flush();
    setTimeout(() => process.exit(0), 200);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // A stray rejected promise (e.g. a write-behind flush racing a dropped connection) is logged, never fatal.
  process.on('unhandledRejection', (reason) => {
    deps.logger.error({ err: reason instanceof Error ? reason.message : String(reason) }, 'unhandled promise rejection');
  });
}
