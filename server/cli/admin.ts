// `npm run admin -- <group> <verb> [args]`: operator commands in either run mode, JSON on stdout.
// Embedded mode: while a server runs on the data directory, the command goes through its local admin channel
// (server/cli/channel.ts); otherwise, and in external mode, the CLI opens the database itself.
import { loadConfig } from '../config';
import { createDeps } from '../deps';
import { createLogger } from '../logger';
import { prepareDatabase } from '../bootstrap';
import type { ErrorBody } from '../../shared/errors';
import { errorBody, runAdmin, usage } from './run';
import { callAdminChannel } from './channel';

export { runAdmin };

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(usage() + '\n');
    return;
  }
  const config = loadConfig();
  if (config.mode === 'embedded') {
    const outcome = await callAdminChannel(config.dataDir, argv);
    if (outcome.kind === 'ok') {
      process.stdout.write(JSON.stringify(outcome.result, null, 2) + '\n');
      return;
    }
    if (outcome.kind === 'error') throw new ChannelError(outcome.body);
  }
  // Logs go to stderr so stdout stays pure JSON.
  // Sanctions lists are not loaded at start (seconds of parsing): the commands that need one load it.
  const deps = await createDeps(config, {
    logger: createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2),
    runWorkers: false,
    loadSanctionsLists: false,
  });
  try {
    await prepareDatabase(deps);
    await deps.lifecycle.start();
    const result = await runAdmin(argv, deps);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    await deps.lifecycle.stop();
  }
}

/** A failure the running server reported: printed exactly as the server shaped it. */
class ChannelError extends Error {
  constructor(readonly body: ErrorBody) {
    super(body.error.message);
  }
}

/** Exits once everything written to stdout/stderr has drained (pipes are asynchronous in Node). */
function exitAfterOutput(code: number) {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

if (require.main === module) {
  // Exit explicitly: a background timer or socket some collaborator left open must not keep the CLI alive.
  main().then(
    () => exitAfterOutput(0),
    (err) => {
      process.stderr.write(JSON.stringify(err instanceof ChannelError ? err.body : errorBody(err), null, 2) + '\n');
      exitAfterOutput(1);
    },
  );
}
