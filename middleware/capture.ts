// Wallet capture: tells the identity server which wallet paid under an operator credential
// (`POST /v1/credentials/wallets`), so later wallet-mode requests resolve to the same operator. Always
// fire-and-forget: a failed capture is logged at debug and never blocks or fails the buyer's response.
import { parseAddressFor } from '../shared/address';
import type { KyaClient } from './api';
import type { GateLogger } from './options';
import type { AddressFamily, WalletCaptureBody } from './wire';

export interface CaptureInput {
  walletAddress: string;
  network: AddressFamily;
  idempotencyKey?: string | null;
}

export type CaptureResult =
  | { status: 'captured'; first_seen: boolean; deduped: boolean }
  | { status: 'skipped'; reason: 'no_operator_token' | 'invalid_wallet' | 'invalid_network' | 'not_gated' }
  | { status: 'failed'; reason: string };

const IDEMPOTENCY_MAX = 200;

/** Sends one capture; resolves (never rejects) with what happened. */
export async function sendCapture(client: KyaClient, logger: GateLogger, operatorToken: string | null, input: CaptureInput): Promise<CaptureResult> {
  // Wallet-authenticated requests have no credential to attach the wallet to.
  if (!operatorToken) return { status: 'skipped', reason: 'no_operator_token' };
  if (input.network !== 'evm' && input.network !== 'solana') return { status: 'skipped', reason: 'invalid_network' };
  const wallet = parseAddressFor(input.network, input.walletAddress);
  if (!wallet) return { status: 'skipped', reason: 'invalid_wallet' };
  const body: WalletCaptureBody = { operator_token: operatorToken, wallet_address: wallet.address, network: wallet.network };
  if (typeof input.idempotencyKey === 'string' && input.idempotencyKey.length > 0) body.idempotency_key = input.idempotencyKey.slice(0, IDEMPOTENCY_MAX);
  try {
    const outcome = await client.outcome.captureWallet(body);
    if (outcome.kind === 'ok') return { status: 'captured', first_seen: outcome.body.first_seen === true, deduped: outcome.body.deduped === true };
    const reason = outcome.kind === 'http_error' ? `${outcome.status} ${outcome.body?.error?.code ?? 'error'}` : outcome.reason;
    logger.debug({ reason, network: wallet.network }, 'kya gate: wallet capture failed');
    return { status: 'failed', reason };
  } catch (err) {
    logger.debug({ err: (err as Error).message }, 'kya gate: wallet capture failed');
    return { status: 'failed', reason: 'exception' };
  }
}
