// Test helpers that build real payment headers: EIP-3009 authorizations signed with ethers test wallets,
// Solana TransferChecked transactions signed with tweetnacl keys, and MPP `Authorization: Payment` credentials.
import crypto from 'node:crypto';
import type { Signer, TypedDataDomain } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { TRANSFER_WITH_AUTHORIZATION_TYPES, USDC_BASE_SEPOLIA, type EvmAssetDomain } from '../../middleware/signer';

export const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';
const TOKEN_PROGRAM = bs58.decode('TokenkegQfeYyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C';

export function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64');
}

export function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function domainOf(asset: EvmAssetDomain): TypedDataDomain {
  return { name: asset.name, version: asset.version, chainId: BigInt(asset.network.split(':')[1]), verifyingContract: asset.asset };
}

export interface Eip3009 {
  authorization: { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string };
  signature: string;
}

/** Signs a TransferWithAuthorization with `wallet` under `domain` (default: USDC on Base Sepolia). */
export async function signEip3009(
  wallet: Signer & { address: string },
  options: { value?: string; domain?: TypedDataDomain; from?: string } = {},
): Promise<Eip3009> {
  const authorization = {
    from: options.from ?? wallet.address,
    to: PAY_TO,
    value: options.value ?? '10000',
    validAfter: '0',
    validBefore: String(Math.floor(Date.now() / 1000) + 600),
    nonce: '0x' + crypto.randomBytes(32).toString('hex'),
  };
  const signature = await wallet.signTypedData(options.domain ?? domainOf(USDC_BASE_SEPOLIA), TRANSFER_WITH_AUTHORIZATION_TYPES, authorization);
  return { authorization, signature };
}

/** x402 v2 PAYMENT-SIGNATURE header value. */
export function v2Header(payment: Eip3009, asset: EvmAssetDomain = USDC_BASE_SEPOLIA): string {
  return b64({
    x402Version: 2,
    resource: { url: 'http://shop.test/paid', description: 'paid thing', mimeType: 'application/json' },
    accepted: {
      scheme: 'exact',
      network: asset.network,
      asset: asset.asset,
      amount: payment.authorization.value,
      payTo: PAY_TO,
      maxTimeoutSeconds: 60,
      extra: { name: asset.name, version: asset.version },
    },
    payload: { signature: payment.signature, authorization: payment.authorization },
  });
}

/** x402 v1 X-PAYMENT header value. */
export function v1Header(payment: Eip3009, network = 'base-sepolia'): string {
  return b64({ x402Version: 1, scheme: 'exact', network, payload: { signature: payment.signature, authorization: payment.authorization } });
}

function shortVec(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  for (;;) {
    let byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      out.push(byte);
      return out;
    }
    byte |= 0x80;
    out.push(byte);
  }
}

export interface SolanaTransfer {
  owner: nacl.SignKeyPair;
  transaction: string;
  ownerAddress: string;
}

/**
 * A partially signed Solana transfer as x402 "exact" clients send it: fee payer (the facilitator) unsigned at
 * index 0, the owner signing at index 1, one SPL TransferChecked (source, mint, destination, owner).
 */
export function solanaTransfer(
  options: { owner?: nacl.SignKeyPair; signer?: nacl.SignKeyPair; amount?: bigint; version?: 'legacy' | 'v0'; tamper?: (message: Uint8Array) => void } = {},
): SolanaTransfer {
  const owner = options.owner ?? nacl.sign.keyPair();
  const feePayer = nacl.sign.keyPair().publicKey;
  const source = nacl.sign.keyPair().publicKey;
  const destination = nacl.sign.keyPair().publicKey;
  const mint = nacl.sign.keyPair().publicKey;
  const keys = [feePayer, owner.publicKey, source, destination, mint, TOKEN_PROGRAM];
  const data = Buffer.alloc(10);
  data[0] = 12;
  data.writeBigUInt64LE(options.amount ?? 10000n, 1);
  data[9] = 6;
  const message: number[] = [];
  if (options.version === 'v0') message.push(0x80);
  message.push(2, 0, 2); // 2 signers, 0 read-only signed, 2 read-only unsigned (mint, program)
  message.push(...shortVec(keys.length));
  for (const k of keys) message.push(...k);
  message.push(...crypto.randomBytes(32));
  message.push(...shortVec(1));
  message.push(5, ...shortVec(4), 2, 4, 3, 1, ...shortVec(data.length), ...data);
  if (options.version === 'v0') message.push(...shortVec(0));
  const messageBytes = Uint8Array.from(message);
  const signature = nacl.sign.detached(messageBytes, (options.signer ?? owner).secretKey);
  options.tamper?.(messageBytes);
  const tx = Buffer.concat([Buffer.from(shortVec(2)), Buffer.alloc(64), Buffer.from(signature), Buffer.from(messageBytes)]);
  return { owner, transaction: tx.toString('base64'), ownerAddress: bs58.encode(owner.publicKey) };
}

export function solanaV2Header(transfer: SolanaTransfer, network = SOLANA_MAINNET): string {
  return b64({
    x402Version: 2,
    accepted: {
      scheme: 'exact',
      network,
      asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      amount: '10000',
      payTo: bs58.encode(nacl.sign.keyPair().publicKey),
      maxTimeoutSeconds: 60,
    },
    payload: { transaction: transfer.transaction },
  });
}

/** `Authorization: Payment <base64url JSON>` credential. */
export function mppAuthorization(credential: { challenge?: Record<string, unknown>; payload?: unknown; source?: string }): string {
  const challenge = credential.challenge ?? {
    id: 'ch_' + crypto.randomBytes(8).toString('hex'),
    realm: 'shop.test',
    method: 'tempo',
    intent: 'charge',
    expires: new Date(Date.now() + 60000).toISOString(),
    request: 'e30',
  };
  return `Payment ${b64url({ ...credential, challenge })}`;
}
