// Sign-In-With-X (CAIP-122) wallet proofs on assess: decodes the SIGN-IN-WITH-X header payload, rebuilds the
// message the wallet signed (EIP-4361 for eip155:*, the same layout for solana:*), checks its domain and uri
// against the origin the caller expects, its validity window and signature, and spends its nonce exactly once
// in the shared key-value store (Redis across instances, in-process when embedded).
import { walletSignatureValid } from '../crypto';
import bs58 from 'bs58';
import { parseAddressFor, type ParsedAddress } from '../../shared/address';
import type { FieldProblem } from '../../shared/errors';
import type { AddressFamily, WalletProofReason, WalletProofVerdict } from '../../shared/types';
import type { KeyValueStore } from '../stores/kv';
import { durationText } from '../../shared/duration';
import { decodeSiwxHeader, SIWX_MAX_HEADER_LENGTH, SIWX_MAX_LIFETIME_MS } from '../../shared/siwx';

/** Clock difference tolerated between the agent's clock and ours for issuedAt / notBefore. */
export const SIWX_CLOCK_SKEW_MS = 30_000;
const MAX_RESOURCES = 20;

const EIP155 = /^eip155:([1-9][0-9]{0,18})$/;
const SOLANA = /^solana:([1-9A-HJ-NP-Za-km-z]{1,32})$/;
const NONCE = /^[0-9a-fA-F]{32}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;
const HOST = /^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$/;
// Any line break or control character would let one set of fields render the same text as another.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f\u2028\u2029]/;

/** The decoded SIGN-IN-WITH-X payload (the challenge fields echoed back plus address and signature). */
export interface SiwxPayload {
  domain: string;
  address: string;
  uri: string;
  version: string;
  chainId: string;
  type: 'eip191' | 'ed25519';
  nonce: string;
  issuedAt: string;
  expirationTime?: string;
  notBefore?: string;
  statement?: string;
  requestId?: string;
  resources?: string[];
  signature: string;
}

/** A structurally valid proof, ready to verify. */
export interface WalletProofInput {
  type: 'siwx';
  payload: SiwxPayload;
  /** The signer as a normalised wallet (EVM lowercase, Solana verbatim). */
  signer: ParsedAddress;
  /** What the merchant expects: its host (`domain`) and origin (scheme, host, port of `uri`). */
  expected: { domain: string; origin: string };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function decodeHeader(value: string): Record<string, unknown> | null {
  try {
    const parsed = decodeSiwxHeader(value);
    return isObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/**
 * Validates `wallet_proof` of an assess body. Every structural problem (not base64 JSON, a missing or
 * ill-formed field) is pushed as a 400 naming the field; a proof that is well formed but wrong (expired,
 * another domain, a bad signature) is not a 400 but a verdict, decided by verifyWalletProof.
 */
export function parseWalletProof(raw: unknown, problems: FieldProblem[]): WalletProofInput | null {
  const before = problems.length;
  const problem = (field: string, message: string) => problems.push({ field: `wallet_proof${field ? '.' + field : ''}`, message });
  if (!isObject(raw)) {
    problem('', 'must be an object {type: "siwx", header, domain, uri}');
    return null;
  }
  if (raw.type !== 'siwx') problem('type', 'must be "siwx"');
  let domain: string | null = null;
  if (typeof raw.domain !== 'string' || !HOST.test(raw.domain))
    problem('domain', 'must be the host (and port, if not the default) of your public origin, e.g. "shop.example.com"');
  else domain = raw.domain.toLowerCase();
  let origin: string | null = null;
  if (typeof raw.uri !== 'string') problem('uri', 'must be your public origin, e.g. "https://shop.example.com"');
  else {
    const url = safeUrl(raw.uri);
    if (!url) problem('uri', 'must be an absolute http(s) URL such as "https://shop.example.com"');
    else origin = url.origin;
  }
  if (typeof raw.header !== 'string' || raw.header.trim().length === 0) {
    problem('header', 'must be the SIGN-IN-WITH-X header value (base64-encoded JSON)');
    return null;
  }
  if (raw.header.length > SIWX_MAX_HEADER_LENGTH) {
    problem('header', `must be at most ${SIWX_MAX_HEADER_LENGTH} characters`);
    return null;
  }
  const body = decodeHeader(raw.header.trim());
  if (!body) {
    problem('header', 'is not base64-encoded JSON of an object');
    return null;
  }
  const payload = parsePayload(body, (field, message) => problem(`header.${field}`, message));
  if (!payload || problems.length > before || !domain || !origin) return null;
  return { type: 'siwx', payload: payload.payload, signer: payload.signer, expected: { domain, origin } };
}

function safeUrl(value: string): URL | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

function parsePayload(
  body: Record<string, unknown>,
  problem: (field: string, message: string) => void,
): { payload: SiwxPayload; signer: ParsedAddress } | null {
  let ok = true;
  const fail = (field: string, message: string) => {
    ok = false;
    problem(field, message);
  };
  const text = (field: string, required: boolean): string | undefined => {
    const value = body[field];
    if (value === undefined || value === null) {
      if (required) fail(field, 'is required');
      return undefined;
    }
    if (typeof value !== 'string' || value.length === 0 || value.length > 1024) fail(field, 'must be a non-empty string of at most 1024 characters');
    else if (CONTROL.test(value)) fail(field, 'must not contain line breaks or control characters');
    else return value;
    return undefined;
  };
  const time = (field: string, required: boolean) => {
    const value = text(field, required);
    if (value !== undefined && (!RFC3339.test(value) || Number.isNaN(Date.parse(value)))) {
      fail(field, 'must be an ISO 8601 timestamp such as "2026-01-15T10:30:00.000Z"');
      return undefined;
    }
    return value;
  };

  const domain = text('domain', true);
  const address = text('address', true);
  const uri = text('uri', true);
  const version = text('version', true);
  const chainId = text('chainId', true);
  const nonce = text('nonce', true);
  const issuedAt = time('issuedAt', true);
  const expirationTime = time('expirationTime', false);
  const notBefore = time('notBefore', false);
  const statement = text('statement', false);
  const requestId = text('requestId', false);
  const signature = text('signature', true);
  if (uri !== undefined && !safeUrl(uri)) fail('uri', 'must be an absolute http(s) URL');
  if (version !== undefined && version !== '1') fail('version', 'must be "1"');
  if (nonce !== undefined && !NONCE.test(nonce)) fail('nonce', 'must be 32 hexadecimal characters');

  let family: AddressFamily | null = null;
  if (chainId !== undefined) {
    if (EIP155.test(chainId)) family = 'evm';
    else if (SOLANA.test(chainId)) family = 'solana';
    else fail('chainId', 'must be a CAIP-2 chain id such as "eip155:8453" or "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"');
  }
  const expectedType = family === 'evm' ? 'eip191' : family === 'solana' ? 'ed25519' : null;
  // `type` is part of the proof format; a client that omits it is understood from chainId.
  const type = body.type === undefined ? expectedType : body.type;
  if (expectedType && type !== expectedType) fail('type', `must be "${expectedType}" for ${chainId}`);

  let signer: ParsedAddress | null = null;
  if (address !== undefined && family) {
    signer = parseAddressFor(family, address);
    if (!signer)
      fail(
        'address',
        family === 'evm' ? 'must be an EVM address (0x + 40 hex) for an eip155 chain' : 'must be a Solana address (base58, 32 bytes) for a solana chain',
      );
  }
  if (signature !== undefined && family === 'evm' && !/^0x[0-9a-fA-F]{130}$/.test(signature))
    fail('signature', 'must be a 65-byte EIP-191 signature in 0x hex (smart-wallet signatures are not supported)');
  if (signature !== undefined && family === 'solana' && !isBase58Of(signature, 64)) fail('signature', 'must be a base58 ed25519 signature (64 bytes)');

  let resources: string[] | undefined;
  if (body.resources !== undefined && body.resources !== null) {
    if (!Array.isArray(body.resources) || body.resources.length > MAX_RESOURCES) fail('resources', `must be an array of at most ${MAX_RESOURCES} URIs`);
    else if (!body.resources.every((r) => typeof r === 'string' && r.length > 0 && r.length <= 1024 && !CONTROL.test(r)))
      fail('resources', 'must contain only URI strings without line breaks');
    else resources = body.resources as string[];
  }
  if (!ok || !signer) return null;
  const payload: SiwxPayload = {
    domain: domain!,
    address: address!,
    uri: uri!,
    version: version!,
    chainId: chainId!,
    type: type as SiwxPayload['type'],
    nonce: nonce!,
    issuedAt: issuedAt!,
    signature: signature!,
  };
  if (expirationTime !== undefined) payload.expirationTime = expirationTime;
  if (notBefore !== undefined) payload.notBefore = notBefore;
  if (statement !== undefined) payload.statement = statement;
  if (requestId !== undefined) payload.requestId = requestId;
  if (resources !== undefined) payload.resources = resources;
  return { payload, signer };
}

function isBase58Of(value: string, bytes: number): boolean {
  try {
    return bs58.decode(value).length === bytes;
  } catch {
    return false;
  }
}

/**
 * The text the wallet signed. EVM follows EIP-4361 exactly (a missing statement still leaves its blank line);
 * Solana uses the same layout "with your Solana account" and the chain reference as Chain ID, as the x402
 * sign-in-with-x clients write it.
 */
export function siwxMessage(p: SiwxPayload): string {
  const evm = p.chainId.startsWith('eip155:');
  const lines = [`${p.domain} wants you to sign in with your ${evm ? 'Ethereum' : 'Solana'} account:`, p.address, ''];
  if (p.statement !== undefined) lines.push(p.statement, '');
  else if (evm) lines.push('');
  lines.push(
    `URI: ${p.uri}`,
    `Version: ${p.version}`,
    `Chain ID: ${p.chainId.slice(p.chainId.indexOf(':') + 1)}`,
    `Nonce: ${p.nonce}`,
    `Issued At: ${p.issuedAt}`,
  );
  if (p.expirationTime !== undefined) lines.push(`Expiration Time: ${p.expirationTime}`);
  if (p.notBefore !== undefined) lines.push(`Not Before: ${p.notBefore}`);
  if (p.requestId !== undefined) lines.push(`Request ID: ${p.requestId}`);
  if (p.resources && p.resources.length > 0) lines.push('Resources:', ...p.resources.map((r) => `- ${r}`));
  return lines.join('\n');
}

function signatureValid(p: SiwxPayload, signer: ParsedAddress): boolean {
  return walletSignatureValid(signer.network, signer.address, siwxMessage(p), p.signature);
}

export interface WalletProofServiceOptions {
  /** Where spent nonces are remembered (Redis, or in-process embedded). */
  kv: KeyValueStore;
  now: () => Date;
}

export class WalletProofService {
  private readonly kv: KeyValueStore;
  private readonly now: () => Date;

  constructor(options: WalletProofServiceOptions) {
    this.kv = options.kv;
    this.now = options.now;
  }

  /**
   * Decides a proof for the claimed wallet. Cheap checks first, the signature next, and the nonce is spent
   * last: only a proof that is valid in every other way can use one up, so nobody can burn another wallet's
   * nonce. A store failure propagates (503): replay protection is never skipped.
   */
  async verify(proof: WalletProofInput, claimed: ParsedAddress): Promise<WalletProofVerdict> {
    const p = proof.payload;
    const base = { type: 'siwx' as const, address: proof.signer.address, chain_id: p.chainId };
    const reject = (reason: WalletProofReason, message: string): WalletProofVerdict => ({ ...base, verified: false, reason, message });
    const now = this.now().getTime();

    if (p.domain.toLowerCase() !== proof.expected.domain)
      return reject('domain_mismatch', `The proof was signed for domain "${p.domain}", not "${proof.expected.domain}".`);
    const uriOrigin = safeUrl(p.uri)!.origin;
    if (uriOrigin !== proof.expected.origin) return reject('uri_mismatch', `The proof's uri is on ${uriOrigin}, not ${proof.expected.origin}.`);
    const issuedAt = Date.parse(p.issuedAt);
    if (issuedAt > now + SIWX_CLOCK_SKEW_MS) return reject('issued_in_future', "The proof's issuedAt is in the future; sign with the current time.");
    const expiresAt = p.expirationTime !== undefined ? Date.parse(p.expirationTime) : issuedAt + SIWX_MAX_LIFETIME_MS;
    if (expiresAt - issuedAt > SIWX_MAX_LIFETIME_MS)
      return reject('expiry_too_long', `The proof's expirationTime is more than ${durationText(SIWX_MAX_LIFETIME_MS / 1000)} after its issuedAt.`);
    if (expiresAt <= now) return reject('expired', `The proof expired at ${new Date(expiresAt).toISOString()}; sign a new one.`);
    if (p.notBefore !== undefined && Date.parse(p.notBefore) > now + SIWX_CLOCK_SKEW_MS)
      return reject('not_yet_valid', "The proof's notBefore is in the future.");
    if (proof.signer.network !== claimed.network || proof.signer.address !== claimed.address) {
      return reject('address_mismatch', 'The proof was signed by a different wallet than the one presented as the identity.');
    }
    if (!signatureValid(p, proof.signer))
      return reject('signature_invalid', "The signature does not match the message rebuilt from the proof's fields and its address.");
    // The nonce is remembered for as long as the proof could otherwise still be accepted.
    const ttl = Math.max(1000, expiresAt - now + SIWX_CLOCK_SKEW_MS);
    const fresh = await this.kv.set(`siwx:nonce:${proof.signer.network}:${proof.signer.address}:${p.nonce.toLowerCase()}`, '1', ttl, { nx: true });
    if (!fresh) return reject('nonce_reused', "This proof's nonce was already used; sign a new proof with a fresh nonce.");
    return { ...base, verified: true, expires_at: new Date(expiresAt).toISOString() };
  }
}
