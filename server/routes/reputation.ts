// GET /v1/reputation/:address — the cached, read-only reputation profile (never triggers scoring). Paid and
// Enterprise get the full profile, Free a redacted one; `chain` filters the chains and agents arrays.
import { Router } from 'express';
import Joi from 'joi';
import { parseAddress, type ParsedAddress } from '../../shared/address';
import { CHAINS, type Chain } from '../../shared/chains';
import type { Deps } from '../deps';
import { requireApiKey } from '../http/auth';
import { route } from '../http/asyncRoute';
import { fail, validator } from '../http/validate';

export const reputationParamsSchema = Joi.object({
  address: Joi.string()
    .custom(
      (value: string, helpers) =>
        parseAddress(value) ??
        fail(helpers, 'invalid_address', 'must be an EVM address (0x + 40 hex) or a Solana base58 address', { summary: 'Invalid wallet address.' }),
    )
    .meta({ 'x-doc': 'WalletAddress' })
    .description('EVM or Solana; the network is detected from the format.'),
});

export const reputationQuerySchema = Joi.object({
  chain: Joi.any()
    .valid(...CHAINS)
    .messages({ 'any.only': `must be one of ${CHAINS.join(', ')}` })
    .description('Only this chain in the chains and agents arrays.'),
});

const parseParams = validator<{ address: ParsedAddress }>(reputationParamsSchema);
const parseQuery = validator<{ chain?: Chain }>(reputationQuerySchema);

export function reputationRouter(deps: Deps): Router {
  const router = Router();
  router.get(
    '/v1/reputation/:address',
    requireApiKey(deps.services.accounts, deps.config.signupUrl, 'reputation'),
    deps.meter.limited(),
    route(async (req, res) => {
      const { address: subject } = parseParams({ address: req.params.address });
      const { chain } = parseQuery({ ...req.query });
      const full = req.principal!.tier !== 'free';
      res.json(await deps.services.reputation.profile(subject, { chain: chain ?? null, full }));
    }),
  );
  return router;
}
