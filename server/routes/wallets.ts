// POST /v1/credentials/wallets: a merchant reports the wallet that paid under an operator credential.
// Mounted before the credentials router so this path is never taken for a credential id.
import { Router } from 'express';
import Joi from 'joi';
import { EVM_ZERO_ADDRESS, parseAddressFor } from '../../shared/address';
import type { AddressFamily } from '../../shared/types';
import type { Deps } from '../deps';
import { requireApiKey } from '../http/auth';
import { route } from '../http/asyncRoute';
import { fail, validator } from '../http/validate';
import type { CaptureRequest } from '../services/walletCapture';

export const IDEMPOTENCY_KEY_MAX = 200;
const NETWORKS: readonly AddressFamily[] = ['evm', 'solana'];

/** A required string: absent, null and "" are all "is required" (a capture without one is meaningless). */
function requiredString(field: string) {
  return Joi.string()
    .empty(Joi.valid(null, ''))
    .required()
    .messages({ 'any.required': `${field} is required`, 'string.base': `${field} must be a string` });
}

/** Longer keys are truncated, by code point so a surrogate pair is never split; "" means none. */
function truncateKey(key: string | null | undefined): string | null {
  if (!key) return null;
  return key.length <= IDEMPOTENCY_KEY_MAX ? key : Array.from(key).slice(0, IDEMPOTENCY_KEY_MAX).join('');
}

interface CaptureBody {
  operator_token: string;
  wallet_address: string;
  network: string;
  idempotency_key?: string | null;
}

/**
 * The capture body. Missing or non-string fields are `bad_request` naming each; a network other than evm or
 * solana is `invalid_network`; a wallet malformed for its network, or the EVM zero address, `invalid_wallet`.
 */
export const captureSchema = Joi.object<CaptureBody>({
  operator_token: requiredString('operator_token').description('The operator credential (opc_…) the payment was made under.'),
  wallet_address: requiredString('wallet_address').description('The wallet that paid: EVM (0x + 40 hex) or Solana (base58), per network.'),
  network: requiredString('network')
    .custom((value: string, helpers) =>
      NETWORKS.includes(value as AddressFamily)
        ? value
        : fail(helpers, 'invalid_network', 'network must be evm or solana', { summary: 'network must be evm or solana.' }),
    )
    .meta({ 'x-doc': 'Network' })
    .description('evm or solana.'),
  idempotency_key: Joi.string()
    .allow(null, '')
    .messages({ 'string.base': 'idempotency_key must be a string' })
    .description(`Retries with the same key are reported as deduped; keys are compared on their first ${IDEMPOTENCY_KEY_MAX} characters.`),
}).custom((body: CaptureBody, helpers): CaptureRequest | Joi.ErrorReport => {
  const network = body.network as AddressFamily;
  const parsed = parseAddressFor(network, body.wallet_address);
  if (!parsed) {
    return fail(helpers, 'invalid_wallet', `wallet_address is not a valid ${network === 'evm' ? 'EVM' : 'Solana'} address`, {
      field: 'wallet_address',
      summary: `wallet_address is not a valid ${network} wallet address.`,
    });
  }
  if (parsed.address === EVM_ZERO_ADDRESS) {
    return fail(helpers, 'invalid_wallet', 'the EVM zero address cannot pay', { field: 'wallet_address', summary: 'wallet_address is the EVM zero address.' });
  }
  return { operatorToken: body.operator_token, network: parsed.network, walletAddress: parsed.address, idempotencyKey: truncateKey(body.idempotency_key) };
});

const parseCaptureRequest = validator<CaptureRequest>(captureSchema, { precedence: ['bad_request', 'invalid_network', 'invalid_wallet'] });

export function walletsRouter(deps: Deps): Router {
  const router = Router();
  const auth = requireApiKey(deps.services.accounts, deps.config.signupUrl, 'wallets');

  router.post(
    '/v1/credentials/wallets',
    auth,
    deps.meter.limited(),
    route(async (req, res) => {
      const request = parseCaptureRequest(req.body);
      res.json(await deps.services.walletCapture.capture(req.principal!.accountId, request));
    }),
  );

  return router;
}
