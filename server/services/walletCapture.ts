// Wallet capture: a merchant reports which wallet paid under an operator credential. The report is
// validated, the credential must be live, and the (credential, wallet, network) record is counted
// atomically and durably before the caller gets its answer.
import { EVM_ZERO_ADDRESS, parseAddressFor, type AddressNetwork } from '../../shared/address';
import { badRequest, type FieldProblem } from '../../shared/errors';
import type { WalletCapturesRepository } from '../repositories/walletCaptures';
import type { CredentialLifecycleService, CredentialsService } from './credentials';

export const IDEMPOTENCY_KEY_MAX = 200;
const NETWORKS: readonly AddressNetwork[] = ['evm', 'solana'];

export interface CaptureRequest {
  operatorToken: string;
  network: AddressNetwork;
  /** Canonical: EVM lowercased, Solana verbatim. */
  walletAddress: string;
  /** Already truncated to IDEMPOTENCY_KEY_MAX characters; null when absent or empty. */
  idempotencyKey: string | null;
}

export type CaptureResponse =
  | { associated: true; first_seen: true }
  | { associated: true; first_seen: false }
  | { associated: true; first_seen: false; deduped: true };

/**
 * Turns a request body into a CaptureRequest or throws the 400 the spec lists: missing or non-string fields
 * → bad_request naming each; a network other than evm/solana → invalid_network; a wallet malformed for the
 * network, or the EVM zero address → invalid_wallet.
 */
export function parseCaptureRequest(body: unknown): CaptureRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest([{ field: 'body', message: 'must be a JSON object' }]);
  }
  const b = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  for (const field of ['operator_token', 'wallet_address', 'network'] as const) {
    const value = b[field];
    if (value === undefined || value === null || value === '') problems.push({ field, message: `${field} is required` });
    else if (typeof value !== 'string') problems.push({ field, message: `${field} must be a string` });
  }
  const key = b.idempotency_key;
  if (key !== undefined && key !== null && typeof key !== 'string') {
    problems.push({ field: 'idempotency_key', message: 'idempotency_key must be a string' });
  }
  if (problems.length) throw badRequest(problems);

  const network = b.network as string;
  if (!NETWORKS.includes(network as AddressNetwork)) {
    throw badRequest([{ field: 'network', message: 'network must be evm or solana' }], 'invalid_network', 'network must be evm or solana.');
  }
  const parsed = parseAddressFor(network as AddressNetwork, b.wallet_address);
  if (!parsed) {
    throw badRequest(
      [{ field: 'wallet_address', message: `wallet_address is not a valid ${network === 'evm' ? 'EVM' : 'Solana'} address` }],
      'invalid_wallet',
      `wallet_address is not a valid ${network} wallet address.`,
    );
  }
  if (parsed.address === EVM_ZERO_ADDRESS) {
    throw badRequest([{ field: 'wallet_address', message: 'the EVM zero address cannot pay' }], 'invalid_wallet', 'wallet_address is the EVM zero address.');
  }
  return {
    operatorToken: b.operator_token as string,
    network: parsed.network,
    walletAddress: parsed.address,
    idempotencyKey: truncateKey(typeof key === 'string' ? key : null),
  };
}

/** Longer keys are truncated (spec), by code point so a surrogate pair is never split. */
function truncateKey(key: string | null): string | null {
  if (!key) return null;
  return key.length <= IDEMPOTENCY_KEY_MAX ? key : Array.from(key).slice(0, IDEMPOTENCY_KEY_MAX).join('');
}

export class WalletCaptureService {
  constructor(
    private readonly credentials: CredentialsService,
    private readonly lifecycle: CredentialLifecycleService,
    private readonly captures: WalletCapturesRepository,
    private readonly now: () => Date,
  ) {}

  async capture(merchantAccountId: string, request: CaptureRequest): Promise<CaptureResponse> {
    const resolution = await this.credentials.resolve(request.operatorToken);
    if (resolution.status !== 'live') throw await this.lifecycle.rejection(resolution, merchantAccountId);
    const outcome = await this.captures.record({
      credentialId: resolution.credential.id,
      accountId: resolution.credential.account_id,
      reportedByAccountId: merchantAccountId,
      network: request.network,
      walletAddress: request.walletAddress,
      idempotencyKey: request.idempotencyKey,
      at: this.now(),
    });
    if (outcome === 'inserted') return { associated: true, first_seen: true };
    if (outcome === 'deduped') return { associated: true, first_seen: false, deduped: true };
    return { associated: true, first_seen: false };
  }
}
