// Wallet capture: a merchant reports which wallet paid under an operator credential. The route validates
// the report; here the credential must be live, and the (credential, wallet, network) record is counted
// atomically and durably before the caller gets its answer.
import type { AddressFamily } from '../../shared/types';
import type { WalletCapturesRepository } from '../repositories/walletCaptures';
import type { CredentialLifecycleService, CredentialsService } from './credentials';
import type { IdentityChanged } from './identity';

export interface CaptureRequest {
  operatorToken: string;
  network: AddressFamily;
  /** Canonical: EVM lowercased, Solana verbatim. */
  walletAddress: string;
  /** Already truncated to 200 characters; null when absent or empty. */
  idempotencyKey: string | null;
}

export type CaptureResponse =
  { associated: true; first_seen: true } | { associated: true; first_seen: false } | { associated: true; first_seen: false; deduped: true };

export interface WalletCaptureServiceOptions {
  credentials: CredentialsService;
  lifecycle: CredentialLifecycleService;
  captures: WalletCapturesRepository;
  now: () => Date;
  identityChanged: IdentityChanged;
}

export class WalletCaptureService {
  private readonly credentials: CredentialsService;
  private readonly lifecycle: CredentialLifecycleService;
  private readonly captures: WalletCapturesRepository;
  private readonly now: () => Date;
  private readonly identityChanged: IdentityChanged;

  constructor(options: WalletCaptureServiceOptions) {
    this.credentials = options.credentials;
    this.lifecycle = options.lifecycle;
    this.captures = options.captures;
    this.now = options.now;
    this.identityChanged = options.identityChanged;
  }

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
    if (outcome === 'inserted') {
      // A new link: the wallet may now resolve to this operator, and the operator has one more wallet.
      await this.identityChanged({ operatorId: resolution.credential.account_id, wallets: [{ network: request.network, address: request.walletAddress }] });
      return { associated: true, first_seen: true };
    }
    if (outcome === 'deduped') return { associated: true, first_seen: false, deduped: true };
    return { associated: true, first_seen: false };
  }
}
