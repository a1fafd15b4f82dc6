// GET /v1/reputation/:address — the cached, read-only reputation profile (never triggers scoring). Paid and
// Enterprise get the full profile, Free a redacted one; `chain` filters the chains and agents arrays.
import { Router } from 'express';
import type { Deps } from '../deps';
import { requireApiKey } from '../http/auth';
import { route } from '../http/asyncRoute';
import { badRequest } from '../../shared/errors';
import { parseAddress } from '../../shared/address';
import { CHAINS, isChain, type Chain } from '../../shared/chains';

export function reputationRouter(deps: Deps): Router {
  const router = Router();
  router.get(
    '/v1/reputation/:address',
    requireApiKey(deps.services.accounts, deps.config.signupUrl, 'reputation'),
    deps.meter.limited(),
    route(async (req, res) => {
      const subject = parseAddress(req.params.address);
      if (!subject) {
        throw badRequest([{ field: 'address', message: 'must be an EVM address (0x + 40 hex) or a Solana base58 address' }], 'invalid_address', 'Invalid wallet address.');
      }
      const raw = req.query.chain;
      let chain: Chain | null = null;
      if (raw !== undefined) {
        if (!isChain(raw)) throw badRequest([{ field: 'chain', message: `must be one of ${CHAINS.join(', ')}` }]);
        chain = raw;
      }
      const full = req.principal!.tier !== 'free';
      res.json(await deps.services.reputation.profile(subject, { chain, full }));
    }),
  );
  return router;
}
