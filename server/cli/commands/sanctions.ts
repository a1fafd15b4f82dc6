// `sanctions …` admin commands: load a wallet sanctions list file (persisted; running instances reload it)
// and show the status of the list in use.
import path from 'node:path';
import { badRequest } from '../../../shared/errors';
import type { WalletListFormat } from '../../sanctions/walletList';
import { requireArg, type Command } from '../registry';

const FORMATS = ['auto', 'sdn_advanced', 'sdn_xml', 'sdn_csv', 'plain'] as const;

export const sanctionsCommands: Command[] = [
  {
    name: 'sanctions load',
    usage: 'sanctions load FILE|DIR|URL [--format auto|sdn_advanced|sdn_xml|sdn_csv|plain]   (wallet-address list)',
    flags: { format: { type: 'string' } },
    async run(ctx) {
      const given = requireArg(ctx, 0, 'file');
      const source = given === 'bundled' || /^https?:\/\//i.test(given) ? given : path.resolve(ctx.cwd, given);
      const format = (ctx.flags.format ?? 'auto') as string;
      if (!(FORMATS as readonly string[]).includes(format)) {
        throw badRequest([{ field: 'format', message: `format must be one of ${FORMATS.join(', ')}` }]);
      }
      try {
        return await ctx.deps.services.walletSanctions.loadFile(source, format as WalletListFormat | 'auto');
      } catch (err) {
        throw badRequest([{ field: 'file', message: (err as Error).message }]);
      }
    },
  },
  {
    name: 'sanctions status',
    usage: 'sanctions status   (wallet-address list in use, refresh state)',
    async run({ deps }) {
      const stored = await deps.repos.walletLists.latestInfo();
      return {
        ...deps.services.walletSanctions.status(),
        persisted: stored
          ? { id: stored.id, source: stored.source, format: stored.format, entries: stored.entry_count, loaded_at: stored.loaded_at.toISOString() }
          : null,
      };
    },
  },
];
