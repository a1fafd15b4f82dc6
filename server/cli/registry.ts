// Admin CLI command registry. Each capability registers `group verb` commands in its own file; every command
// prints JSON on stdout. Errors print `{error:{code,message,details}}` on stderr and exit non-zero.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Deps } from '../deps';
import { badRequest } from '../../shared/errors';

export interface CommandContext {
  deps: Deps;
  /** Positional arguments after `group verb`. */
  args: string[];
  flags: Record<string, string | boolean | undefined>;
  /** The invoking shell's working directory: through the admin channel the command runs in the server process. */
  cwd: string;
}

export interface Command {
  name: string; // e.g. 'account create'
  usage: string;
  flags?: ParseArgsConfig['options'];
  run(ctx: CommandContext): Promise<unknown>;
}

export function parseCommandArgs(command: Command, argv: string[]): { args: string[]; flags: Record<string, string | boolean | undefined> } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: command.flags ?? {}, allowPositionals: true, strict: true });
    return { args: positionals, flags: values as Record<string, string | boolean | undefined> };
  } catch (err) {
    throw badRequest([{ field: 'arguments', message: `${(err as Error).message}. Usage: ${command.usage}` }]);
  }
}

export function requireArg(ctx: CommandContext, index: number, name: string): string {
  const value = ctx.args[index];
  if (!value) throw badRequest([{ field: name, message: `${name} is required` }]);
  return value;
}

/** Parses a positive integer flag; `none` clears an override (null). */
export function intFlag(value: string | boolean | undefined, name: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (typeof value !== 'string' || !/^\d+$/.test(value) || Number(value) < 1) {
    throw badRequest([{ field: name, message: `${name} must be a positive integer (or "none" to clear)` }]);
  }
  return Number(value);
}
