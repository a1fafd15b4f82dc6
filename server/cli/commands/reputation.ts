// `reputation …` admin commands: index a chain once, score an address now (both run in this process, without
// the job queue), and show indexer health. Useful for demos and for operators checking a chain's progress.
import { badRequest } from '../../../shared/errors';
import { parseAddress } from '../../../shared/address';
import { isChain } from '../../../shared/chains';
import { requireArg, type Command } from '../registry';

export const reputationCommands: Command[] = [
  {
    name: 'reputation sync',
    usage: 'reputation sync [--chain NAME]   (index configured chains up to the confirmed head)',
    flags: { chain: { type: 'string' } },
    async run({ deps, flags }) {
      const indexers = [...deps.services.reputation.indexers.values()].filter((i) => !flags.chain || i.chain.name === flags.chain);
      if (indexers.length === 0) throw badRequest([{ field: 'chain', message: 'no configured chain matches (see REPUTATION_CHAINS_FILE)' }]);
      const results = [];
      for (const indexer of indexers) {
        const r = await indexer.sync();
        results.push({
          chain: r.chain,
          head: r.head,
          safe_block: r.safeBlock,
          ranges: r.ranges,
          caught_up: r.caughtUp,
          registrations_resolved: r.resolved,
          agents_changed: r.touchedAgents.length,
        });
      }
      return { synced: results };
    },
  },
  {
    name: 'reputation score',
    usage: 'reputation score ADDRESS [--chain NAME]   (score now; the profile is then served by GET /v1/reputation)',
    flags: { chain: { type: 'string' } },
    async run(ctx) {
      const parsed = parseAddress(requireArg(ctx, 0, 'address'));
      if (!parsed) throw badRequest([{ field: 'address', message: 'must be an EVM or Solana address' }], 'invalid_address');
      const chain = ctx.flags.chain;
      if (chain !== undefined && !isChain(chain)) throw badRequest([{ field: 'chain', message: 'unsupported chain' }]);
      const outcome = await ctx.deps.services.reputation.scorer.score({
        address: parsed.address,
        network: parsed.network,
        chain: (chain as string) ?? null,
        reason: 'admin',
      });
      return { address: parsed.address, network: parsed.network, ...outcome };
    },
  },
  {
    name: 'reputation status',
    usage: 'reputation status   (indexer health and checkpoints per chain)',
    async run({ deps }) {
      const [states, checkpoints] = await Promise.all([
        deps.repos.reputationChain.syncStates(),
        deps
          .db<{ chain: string; kind: string; contract: string; last_block: string; updated_at: Date }>('chain_checkpoints')
          .select('chain', 'kind', 'contract', 'last_block', 'updated_at')
          .orderBy(['chain', 'kind']),
      ]);
      return { chains: states, checkpoints: checkpoints.map((c) => ({ ...c, last_block: Number(c.last_block) })) };
    },
  },
];
