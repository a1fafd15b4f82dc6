// The admin commands as one table, and running one of them against a set of collaborators: used by the CLI
// process itself (direct database access) and by a running embedded server's local admin channel.
import { ApiError, type ErrorBody } from '../../shared/errors';
import type { Deps } from '../deps';
import { parseCommandArgs, type Command } from './registry';
import { accountCommands } from './commands/account';
import { screeningCommands } from './commands/screening';
import { sanctionsCommands } from './commands/sanctions';
import { reputationCommands } from './commands/reputation';

export const COMMANDS: Command[] = [...accountCommands, ...screeningCommands, ...sanctionsCommands, ...reputationCommands];

export function usage(): string {
  return ['Usage: npm run admin -- <command>', '', ...COMMANDS.map((c) => `  ${c.usage}`)].join('\n');
}

export function findCommand(argv: string[]): Command | undefined {
  return COMMANDS.find((c) => c.name.split(' ').every((w, i) => argv[i] === w));
}

/** `cwd`: the working directory of whoever typed the command (relative file arguments are resolved against it). */
export async function runAdmin(argv: string[], deps: Deps, cwd: string = process.cwd()): Promise<unknown> {
  const command = findCommand(argv);
  if (!command)
    throw new ApiError('bad_request', `Unknown command: ${argv.slice(0, 2).join(' ') || '(none)'}`, { details: [{ field: 'command', message: usage() }] });
  const { args, flags } = parseCommandArgs(command, argv.slice(command.name.split(' ').length));
  return command.run({ deps, args, flags, cwd });
}

/** What the CLI prints on stderr for a failed command, whichever way it ran. */
export function errorBody(err: unknown): ErrorBody {
  return err instanceof ApiError ? err.toBody() : { error: { code: 'internal_error', message: (err as Error).message } };
}
