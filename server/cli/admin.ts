// `npm run admin -- <group> <verb> [args]`: operator commands in either run mode, JSON on stdout.
// In embedded mode the CLI opens the same PGlite data directory as the server: stop the server first.
import { ApiError } from '../../shared/errors';
import { loadConfig } from '../config';
import { createDeps, type Deps } from '../deps';
import { createLogger } from '../logger';
import { prepareDatabase } from '../bootstrap';
import { parseCommandArgs, type Command } from './registry';
import { accountCommands } from './commands/account';
import { screeningCommands } from './commands/screening';
import { sanctionsCommands } from './commands/sanctions';
import { reputationCommands } from './commands/reputation';

const COMMANDS: Command[] = [...accountCommands, ...screeningCommands, ...sanctionsCommands, ...reputationCommands];

function usage(): string {
  return ['Usage: npm run admin -- <command>', '', ...COMMANDS.map((c) => `  ${c.usage}`)].join('\n');
}

export async function runAdmin(argv: string[], deps: Deps): Promise<unknown> {
  const command = COMMANDS.find((c) => {
    const words = c.name.split(' ');
    return words.every((w, i) => argv[i] === w);
  });
  if (!command) throw new ApiError('bad_request', `Unknown command: ${argv.slice(0, 2).join(' ') || '(none)'}`, { details: [{ field: 'command', message: usage() }] });
  const { args, flags } = parseCommandArgs(command, argv.slice(command.name.split(' ').length));
  return command.run({ deps, args, flags });
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(usage() + '\n');
    return;
  }
  const config = loadConfig();
  // Logs go to stderr so stdout stays pure JSON.
  const deps = await createDeps(config, { logger: createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, 2), runWorkers: false });
  try {
    await prepareDatabase(deps);
    await deps.lifecycle.start();
    const result = await runAdmin(argv, deps);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    await deps.lifecycle.stop();
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
      const body = err instanceof ApiError ? err.toBody() : { error: { code: 'internal_error', message: (err as Error).message } };
      process.stderr.write(JSON.stringify(body, null, 2) + '\n');
      exitAfterOutput(1);
    },
  );
}
