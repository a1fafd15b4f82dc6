// Builds SIGN-IN-WITH-X header values the way an agent's wallet would: the EIP-4361 text signed with a real
// ethers key (personal_sign), or the Solana layout signed with a real tweetnacl key. Written from the message
// format itself, independently of the server's code, so a format drift on either side fails the tests.
import crypto from 'node:crypto';
import type { Wallet } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';

export const SOLANA_MAINNET = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp';

export interface SiwxFields {
  domain: string;
  uri: string;
  /** Defaults: now (real time) and now + 5 minutes. */
  issuedAt?: Date;
  expirationTime?: Date | null;
  notBefore?: Date;
  nonce?: string;
  statement?: string | null;
  chainId?: string;
  resources?: string[];
  /** Overrides the address written in the proof (and signed), e.g. a different wallet than the signer. */
  address?: string;
}

/** The decoded SIGN-IN-WITH-X payload the helpers build (tests may add or override any key). */
export interface ProofPayload {
  domain: string;
  address: string;
  uri: string;
  version: string;
  chainId: string;
  type: string;
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
  statement?: string;
  resources?: string[];
  signature?: string;
  [key: string]: unknown;
}

export function freshNonce(): string {
  return crypto.randomBytes(16).toString('hex');
}

function lines(p: ProofPayload, account: 'Ethereum' | 'Solana'): string {
  const out = [`${p.domain} wants you to sign in with your ${account} account:`, p.address, ''];
  if (p.statement !== undefined) out.push(p.statement, '');
  else if (account === 'Ethereum') out.push(''); // EIP-4361: the statement's line stays empty
  out.push(`URI: ${p.uri}`, `Version: ${p.version}`, `Chain ID: ${p.chainId.split(':')[1]}`, `Nonce: ${p.nonce}`, `Issued At: ${p.issuedAt}`);
  if (p.expirationTime !== undefined) out.push(`Expiration Time: ${p.expirationTime}`);
  if (p.notBefore !== undefined) out.push(`Not Before: ${p.notBefore}`);
  if (p.resources?.length) out.push('Resources:', ...p.resources.map((r) => `- ${r}`));
  return out.join('\n');
}

function payloadOf(f: SiwxFields, address: string, chainId: string, type: string): ProofPayload {
  const issuedAt = f.issuedAt ?? new Date();
  const p: ProofPayload = {
    domain: f.domain,
    address,
    uri: f.uri,
    version: '1',
    chainId,
    type,
    nonce: f.nonce ?? freshNonce(),
    issuedAt: issuedAt.toISOString(),
  };
  const expiration = f.expirationTime === undefined ? new Date(issuedAt.getTime() + 5 * 60_000) : f.expirationTime;
  if (expiration) p.expirationTime = expiration.toISOString();
  if (f.notBefore) p.notBefore = f.notBefore.toISOString();
  const statement = f.statement === undefined ? 'Sign in to prove you control this wallet.' : f.statement;
  if (statement !== null) p.statement = statement;
  if (f.resources) p.resources = f.resources;
  return p;
}

export function encodeProof(payload: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(payload)).toString('base64');
}

/** An EVM proof (EIP-4361 text, EIP-191 personal_sign by `signer`). Returns the header value and its payload. */
export async function evmProof(signer: Wallet, f: SiwxFields): Promise<{ header: string; payload: ProofPayload; message: string }> {
  const payload = payloadOf(f, f.address ?? signer.address, f.chainId ?? 'eip155:8453', 'eip191');
  const message = lines(payload, 'Ethereum');
  payload.signature = await signer.signMessage(message);
  return { header: encodeProof(payload), payload, message };
}

/** A Solana proof (the same layout "with your Solana account", ed25519-signed by `keys`). */
export function solanaProof(keys: nacl.SignKeyPair, f: SiwxFields): { header: string; payload: ProofPayload; message: string } {
  const payload = payloadOf(f, f.address ?? bs58.encode(keys.publicKey), f.chainId ?? SOLANA_MAINNET, 'ed25519');
  const message = lines(payload, 'Solana');
  payload.signature = bs58.encode(nacl.sign.detached(new TextEncoder().encode(message), keys.secretKey));
  return { header: encodeProof(payload), payload, message };
}
