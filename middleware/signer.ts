// Recovers the wallet that signed a payment from the request's payment headers, before assess runs:
// x402 v2 `PAYMENT-SIGNATURE` / v1 `X-PAYMENT` (EVM EIP-3009 authorizations checked against the
// MERCHANT's configured asset domain; Solana TransferChecked owner checked with ed25519) and MPP
// `Authorization: Payment` (the `source` DID, confirmed where the payload allows). Pure functions of the
// headers and the merchant config: a forged or undecodable header is reported, never thrown.
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { isEvmAddress, isSolanaAddress } from '../shared/address';
import { recoverTypedDataSigner, transactionSender, type TypedDataDomain } from './evm';
import type { AddressFamily } from './wire';

/** How the signer address was established. */
export type SignerProof =
  /** EIP-3009 authorization: ECDSA recovery under the merchant's asset domain equals `authorization.from`. */
  | 'eip3009_ecdsa'
  /** Smart-wallet (ERC-1271/6492, > 65-byte) signature: ECDSA recovery does not apply; `from` is a claim settlement proves. */
  | 'smart_wallet_claim'
  /** Solana TransferChecked owner whose ed25519 signature over the message verified. */
  | 'solana_ed25519'
  /** MPP `source` DID confirmed by the signed EVM transaction in the payload. */
  | 'mpp_evm_transaction'
  /** MPP payer confirmed by the signed Solana transaction in the payload. */
  | 'mpp_solana_transaction'
  /** MPP `source` DID the payload cannot confirm (e.g. a Tempo transaction type or a tx hash). */
  | 'mpp_source_claim'
  /** A rail with no wallet signature (card, shared payment token) or an MPP credential naming no payer. */
  | 'no_wallet_signature'
  /** Produced by the merchant's own `extractSigner`. */
  | 'custom';

export interface PaymentSigner {
  rail: 'x402' | 'mpp' | 'custom';
  /** Which header carried the payment. */
  header: 'payment-signature' | 'x-payment' | 'authorization' | 'custom';
  /** x402 scheme (`exact`) or MPP method (`tempo`, `stripe`, …). */
  scheme: string | null;
  /** CAIP-2 network of an x402 payment, or the MPP network named by the challenge/DID. */
  paymentNetwork: string | null;
  /** Address family sent to assess as `signer.network`. */
  network: AddressFamily;
  /** Normalised signer (EVM lowercase, Solana verbatim); null when the rail carries no wallet signature. */
  address: string | null;
  /** True when the address was cryptographically established from the payload. */
  verified: boolean;
  proof: SignerProof;
  /** Stable per payment; sent as the wallet capture idempotency key. */
  idempotencyKey: string | null;
}

export type SignerErrorCode =
  /** The header is not valid base64/base64url JSON of the expected shape. */
  | 'payment_header_malformed'
  /** The header decodes but its signature does not belong to the wallet it names (forged or tampered). */
  | 'payment_signature_invalid'
  /** A scheme, network or asset the merchant has not configured, so the signer cannot be checked. */
  | 'payment_unsupported';

export type SignerExtraction =
  { kind: 'none' } | { kind: 'signer'; signer: PaymentSigner } | { kind: 'invalid'; code: SignerErrorCode; message: string; header: string };

/** The EIP-712 domain of an EIP-3009 token the merchant accepts. */
export interface EvmAssetDomain {
  /** CAIP-2 network, `eip155:<chainId>`. */
  network: string;
  /** Token contract (the domain's verifyingContract). */
  asset: string;
  /** EIP-712 domain name (USDC on Base: `USD Coin`; on Base Sepolia: `USDC`). */
  name: string;
  /** EIP-712 domain version (USDC: `2`). */
  version: string;
}

export const USDC_BASE: EvmAssetDomain = Object.freeze({
  network: 'eip155:8453',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  name: 'USD Coin',
  version: '2',
});
export const USDC_BASE_SEPOLIA: EvmAssetDomain = Object.freeze({
  network: 'eip155:84532',
  asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  name: 'USDC',
  version: '2',
});

/** Resolved, pre-indexed signer configuration (built once at mount time). */
export interface SignerConfig {
  /** CAIP-2 network → the domains configured for it. */
  evmDomains: ReadonlyMap<string, ReadonlyArray<{ asset: string; domain: TypedDataDomain }>>;
}

/** v1 x402 used network names; v2 uses CAIP-2. */
const V1_NETWORKS: Readonly<Record<string, string>> = {
  base: 'eip155:8453',
  'base-sepolia': 'eip155:84532',
  ethereum: 'eip155:1',
  sepolia: 'eip155:11155111',
  polygon: 'eip155:137',
  'polygon-amoy': 'eip155:80002',
  avalanche: 'eip155:43114',
  'avalanche-fuji': 'eip155:43113',
  arbitrum: 'eip155:42161',
  optimism: 'eip155:10',
  solana: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  'solana-devnet': 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
};

export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
};

const CAIP2_EIP155 = /^eip155:([1-9][0-9]{0,18})$/;
const CAIP2_SOLANA = /^solana:[1-9A-HJ-NP-Za-km-z]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;
const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const UINT = /^(0|[1-9][0-9]{0,77})$/;
const MAX_HEADER_LENGTH = 64 * 1024;
const UINT256_MAX = (1n << 256n) - 1n;

/** Builds the indexed config; throws naming the bad entry (called at mount time). */
export function buildSignerConfig(assets: readonly EvmAssetDomain[]): SignerConfig {
  const evmDomains = new Map<string, Array<{ asset: string; domain: TypedDataDomain }>>();
  assets.forEach((a, i) => {
    const where = `x402Assets[${i}]`;
    if (!a || typeof a !== 'object') throw new TypeError(`${where} must be an object {network, asset, name, version}`);
    const m = typeof a.network === 'string' ? CAIP2_EIP155.exec(a.network) : null;
    if (!m) throw new TypeError(`${where}.network must be a CAIP-2 EVM network such as "eip155:8453" (got ${JSON.stringify(a.network)})`);
    if (typeof a.asset !== 'string' || !isEvmAddress(a.asset)) throw new TypeError(`${where}.asset must be a 0x-prefixed 40-hex token address`);
    if (typeof a.name !== 'string' || a.name.length === 0) throw new TypeError(`${where}.name must be the token's EIP-712 domain name (e.g. "USD Coin")`);
    if (typeof a.version !== 'string' || a.version.length === 0) throw new TypeError(`${where}.version must be the token's EIP-712 domain version (e.g. "2")`);
    const list = evmDomains.get(a.network) ?? [];
    list.push({ asset: a.asset.toLowerCase(), domain: { name: a.name, version: a.version, chainId: BigInt(m[1]), verifyingContract: a.asset } });
    evmDomains.set(a.network, list);
  });
  return { evmDomains };
}

type Headers = Record<string, string | string[] | undefined>;

function headerValue(headers: Headers, name: string): string | undefined {
  const raw = headers[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed.length > 0 ? trimmed : undefined;
}

/** True when the request carries any payment header the gate understands (used by conditionalGate). */
export function hasPaymentHeader(headers: Headers): boolean {
  if (headerValue(headers, 'payment-signature') || headerValue(headers, 'x-payment')) return true;
  const auth = headerValue(headers, 'authorization');
  return auth !== undefined && /^payment\s/i.test(auth);
}

/** Reads the first payment header present (v2, then v1, then MPP) and establishes its signer. */
export function extractPaymentSigner(headers: Headers, config: SignerConfig): SignerExtraction {
  const v2 = headerValue(headers, 'payment-signature');
  if (v2 !== undefined) return fromX402(v2, 'payment-signature', config);
  const v1 = headerValue(headers, 'x-payment');
  if (v1 !== undefined) return fromX402(v1, 'x-payment', config);
  const auth = headerValue(headers, 'authorization');
  if (auth !== undefined && /^payment\s/i.test(auth)) return fromMpp(auth.replace(/^payment\s+/i, ''), config);
  return NO_PAYMENT;
}

const NO_PAYMENT: SignerExtraction = Object.freeze({ kind: 'none' });

class SignerFailure extends Error {
  constructor(
    readonly code: SignerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

function malformed(message: string): never {
  throw new SignerFailure('payment_header_malformed', message);
}

function decodeJson(value: string, label: string): Record<string, unknown> {
  if (value.length > MAX_HEADER_LENGTH) malformed(`${label} is larger than ${MAX_HEADER_LENGTH} bytes`);
  if (!BASE64.test(value)) malformed(`${label} is not base64`);
  let parsed: unknown;
  try {
    // Buffer accepts both alphabets; the regex above already rejected anything else.
    parsed = JSON.parse(Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8'));
  } catch {
    malformed(`${label} does not decode to JSON`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) malformed(`${label} must decode to a JSON object`);
  return parsed as Record<string, unknown>;
}

function asObject(value: unknown, label: string): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) malformed(`${label} must be an object`);
  return value as Record<string, unknown>;
}

function asString(value: unknown, label: string): string {
  if (typeof value !== 'string' || value.length === 0) malformed(`${label} must be a non-empty string`);
  return value;
}

function guard(header: string, fn: () => SignerExtraction): SignerExtraction {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SignerFailure) return { kind: 'invalid', code: err.code, message: err.message, header };
    // Anything else thrown while decoding attacker-controlled bytes is still a bad header, not a crash.
    return { kind: 'invalid', code: 'payment_header_malformed', message: `${header} could not be decoded`, header };
  }
}

// ---------------------------------------------------------------------------------------------- x402

function fromX402(value: string, header: 'payment-signature' | 'x-payment', config: SignerConfig): SignerExtraction {
  const label = header === 'payment-signature' ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT';
  return guard(label, () => {
    const body = decodeJson(value, label);
    const version = body.x402Version;
    let scheme: string;
    let network: string;
    let asset: string | undefined;
    if (version === 2) {
      const accepted = asObject(body.accepted, `${label}.accepted`);
      scheme = asString(accepted.scheme, `${label}.accepted.scheme`);
      network = asString(accepted.network, `${label}.accepted.network`);
      asset = typeof accepted.asset === 'string' ? accepted.asset : undefined;
    } else if (version === 1) {
      scheme = asString(body.scheme, `${label}.scheme`);
      const name = asString(body.network, `${label}.network`);
      network = V1_NETWORKS[name] ?? name;
    } else {
      malformed(`${label}.x402Version must be 1 or 2`);
    }
    if (scheme !== 'exact') throw new SignerFailure('payment_unsupported', `x402 scheme "${scheme}" is not supported (only "exact")`);
    const payload = asObject(body.payload, `${label}.payload`);
    if (CAIP2_EIP155.test(network)) return { kind: 'signer', signer: fromEip3009(payload, label, network, asset, config) };
    if (CAIP2_SOLANA.test(network)) return { kind: 'signer', signer: fromSolanaExact(payload, label, network) };
    throw new SignerFailure('payment_unsupported', `x402 network "${network}" is not supported`);
  });
}

function uintField(value: unknown, label: string): string {
  const text = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : value;
  if (typeof text !== 'string' || !UINT.test(text) || BigInt(text) > UINT256_MAX) malformed(`${label} must be an unsigned integer string`);
  return text;
}

function fromEip3009(payload: Record<string, unknown>, label: string, network: string, asset: string | undefined, config: SignerConfig): PaymentSigner {
  const signature = asString(payload.signature, `${label}.payload.signature`);
  const auth = asObject(payload.authorization, `${label}.payload.authorization`);
  const from = asString(auth.from, `${label}.payload.authorization.from`);
  const to = asString(auth.to, `${label}.payload.authorization.to`);
  if (!isEvmAddress(from)) malformed(`${label}.payload.authorization.from must be an EVM address`);
  if (!isEvmAddress(to)) malformed(`${label}.payload.authorization.to must be an EVM address`);
  const message = {
    from,
    to,
    value: uintField(auth.value, `${label}.payload.authorization.value`),
    validAfter: uintField(auth.validAfter, `${label}.payload.authorization.validAfter`),
    validBefore: uintField(auth.validBefore, `${label}.payload.authorization.validBefore`),
    nonce: asString(auth.nonce, `${label}.payload.authorization.nonce`),
  };
  if (!BYTES32.test(message.nonce)) malformed(`${label}.payload.authorization.nonce must be 32 bytes of hex`);
  if (!HEX.test(signature)) malformed(`${label}.payload.signature must be 0x-prefixed hex`);

  // The domain comes from the merchant's configuration, never from the client: a wrong domain name does not
  // throw, it silently recovers some other address, which would then be checked instead of the payer.
  const candidates = (config.evmDomains.get(network) ?? []).filter((d) => asset === undefined || d.asset === asset.toLowerCase());
  if (candidates.length === 0) {
    const what = asset ? `asset ${asset} on ${network}` : `network ${network}`;
    throw new SignerFailure('payment_unsupported', `${what} is not an asset this merchant accepts`);
  }
  const base = {
    rail: 'x402' as const,
    header: label.toLowerCase() as PaymentSigner['header'],
    scheme: 'exact',
    paymentNetwork: network,
    network: 'evm' as const,
    idempotencyKey: `x402:${network}:${message.nonce.toLowerCase()}`,
  };
  const length = (signature.length - 2) / 2;
  if (length > 65) {
    // ERC-1271 / ERC-6492 signatures are verified on chain by the facilitator at settlement; the gate can
    // only carry the claimed payer forward (and capture only runs after the handler succeeded).
    return { ...base, address: from.toLowerCase(), verified: false, proof: 'smart_wallet_claim' };
  }
  if (length !== 65 && length !== 64) malformed(`${label}.payload.signature must be 64 or 65 bytes (or longer for a smart wallet)`);
  const recoveredFrom = candidates.some(({ domain }) => {
    try {
      return recoverTypedDataSigner(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, message, signature) === from.toLowerCase();
    } catch {
      return false;
    }
  });
  if (!recoveredFrom)
    throw new SignerFailure('payment_signature_invalid', `${label} signature was not made by authorization.from under the merchant's asset domain`);
  return { ...base, address: from.toLowerCase(), verified: true, proof: 'eip3009_ecdsa' };
}

// -------------------------------------------------------------------------------------------- Solana

const TOKEN_PROGRAMS = new Set(['TokenkegQfeYyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb']);
const TRANSFER_CHECKED = 12;

export interface ParsedSolanaTransaction {
  signatures: Uint8Array[];
  message: Uint8Array;
  numRequiredSignatures: number;
  accountKeys: Uint8Array[];
  instructions: Array<{ programIdIndex: number; accounts: number[]; data: Uint8Array }>;
}

/** Parses a (legacy or v0) wire transaction; throws on any out-of-bounds read. */
export function parseSolanaTransaction(bytes: Uint8Array): ParsedSolanaTransaction {
  let offset = 0;
  const need = (n: number) => {
    if (offset + n > bytes.length) throw new Error('truncated transaction');
  };
  const shortVec = () => {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      need(1);
      const byte = bytes[offset++];
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) return value;
    }
    throw new Error('bad compact-u16');
  };
  const take = (n: number) => {
    need(n);
    const out = bytes.subarray(offset, offset + n);
    offset += n;
    return out;
  };
  const signatureCount = shortVec();
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < signatureCount; i++) signatures.push(take(64));
  const messageStart = offset;
  need(1);
  if (bytes[offset] & 0x80) {
    if ((bytes[offset] & 0x7f) !== 0) throw new Error('unsupported transaction version');
    offset += 1;
  }
  const [numRequiredSignatures] = take(3);
  const keyCount = shortVec();
  const accountKeys: Uint8Array[] = [];
  for (let i = 0; i < keyCount; i++) accountKeys.push(take(32));
  take(32); // recent blockhash
  const instructionCount = shortVec();
  const instructions: ParsedSolanaTransaction['instructions'] = [];
  for (let i = 0; i < instructionCount; i++) {
    const [programIdIndex] = take(1);
    const accounts = Array.from(take(shortVec()));
    const data = take(shortVec());
    instructions.push({ programIdIndex, accounts, data });
  }
  // v0 address-table lookups follow; the payer must be a static signer, so they are not needed.
  return { signatures, message: bytes.subarray(messageStart), numRequiredSignatures, accountKeys, instructions };
}

/** The TransferChecked owner whose ed25519 signature verifies over the message; throws a SignerFailure otherwise. */
function solanaPayer(transactionB64: string, label: string): { owner: string; signature: string } {
  if (!BASE64.test(transactionB64)) malformed(`${label} transaction is not base64`);
  let tx: ParsedSolanaTransaction;
  try {
    tx = parseSolanaTransaction(Buffer.from(transactionB64, 'base64'));
  } catch (err) {
    malformed(`${label} transaction could not be parsed (${(err as Error).message})`);
  }
  if (tx.signatures.length !== tx.numRequiredSignatures) malformed(`${label} transaction signature count does not match its header`);
  const owners = new Set<number>();
  for (const ix of tx.instructions) {
    const program = tx.accountKeys[ix.programIdIndex];
    if (!program || !TOKEN_PROGRAMS.has(bs58.encode(program))) continue;
    if (ix.data.length < 10 || ix.data[0] !== TRANSFER_CHECKED || ix.accounts.length < 4) continue;
    owners.add(ix.accounts[3]); // accounts: source, mint, destination, owner
  }
  if (owners.size === 0) malformed(`${label} transaction has no SPL TransferChecked instruction`);
  if (owners.size > 1) throw new SignerFailure('payment_signature_invalid', `${label} transaction transfers from more than one owner`);
  const [ownerIndex] = owners;
  if (ownerIndex >= tx.numRequiredSignatures || ownerIndex >= tx.accountKeys.length) {
    throw new SignerFailure('payment_signature_invalid', `${label} transfer owner is not a signer of the transaction`);
  }
  const ownerKey = tx.accountKeys[ownerIndex];
  const signature = tx.signatures[ownerIndex];
  if (!nacl.sign.detached.verify(tx.message, signature, ownerKey)) {
    throw new SignerFailure('payment_signature_invalid', `${label} transfer owner's ed25519 signature does not verify`);
  }
  return { owner: bs58.encode(ownerKey), signature: bs58.encode(signature) };
}

function fromSolanaExact(payload: Record<string, unknown>, label: string, network: string): PaymentSigner {
  const transaction = asString(payload.transaction, `${label}.payload.transaction`);
  const { owner, signature } = solanaPayer(transaction, `${label}.payload`);
  return {
    rail: 'x402',
    header: label.toLowerCase() as PaymentSigner['header'],
    scheme: 'exact',
    paymentNetwork: network,
    network: 'solana',
    address: owner,
    verified: true,
    proof: 'solana_ed25519',
    idempotencyKey: `x402:${network}:${signature}`,
  };
}

// ----------------------------------------------------------------------------------------------- MPP

const DID_EVM = /^did:pkh:eip155:([1-9][0-9]{0,18}):(0x[0-9a-fA-F]{40})$/;
const DID_SOLANA = /^did:pkh:solana:([1-9A-HJ-NP-Za-km-z]{1,64}):([1-9A-HJ-NP-Za-km-z]{32,44})$/;
/** Methods that move money without a wallet signature. */
const CARD_METHODS = new Set(['stripe', 'card', 'spt']);

function fromMpp(token: string, _config: SignerConfig): SignerExtraction {
  return guard('Authorization', () => {
    const body = decodeJson(token, 'Authorization: Payment credential');
    const challenge = asObject(body.challenge, 'Authorization: Payment credential.challenge');
    const method = typeof challenge.method === 'string' ? challenge.method.toLowerCase() : null;
    const challengeId = typeof challenge.id === 'string' && challenge.id.length > 0 ? challenge.id.slice(0, 190) : null;
    const payload = body.payload && typeof body.payload === 'object' && !Array.isArray(body.payload) ? (body.payload as Record<string, unknown>) : {};
    const base = { rail: 'mpp' as const, header: 'authorization' as const, scheme: method, idempotencyKey: challengeId ? `mpp:${challengeId}` : null };

    let claimed: { network: AddressFamily; address: string; paymentNetwork: string } | null = null;
    if (body.source !== undefined) {
      const source = asString(body.source, 'Authorization: Payment credential.source');
      const evm = DID_EVM.exec(source);
      const sol = DID_SOLANA.exec(source);
      if (evm) claimed = { network: 'evm', address: evm[2].toLowerCase(), paymentNetwork: `eip155:${evm[1]}` };
      else if (sol && isSolanaAddress(sol[2])) claimed = { network: 'solana', address: sol[2], paymentNetwork: `solana:${sol[1]}` };
      else malformed('Authorization: Payment credential.source must be a did:pkh DID (eip155 or solana)');
    }

    if (!claimed && (CARD_METHODS.has(method ?? '') || typeof payload.spt === 'string')) {
      return { kind: 'signer', signer: { ...base, paymentNetwork: null, network: 'evm', address: null, verified: false, proof: 'no_wallet_signature' } };
    }

    // Solana pull-mode credential: the transfer authority is the payer.
    if (typeof payload.transaction === 'string') {
      const { owner } = solanaPayer(payload.transaction, 'Authorization: Payment credential.payload');
      if (claimed && (claimed.network !== 'solana' || claimed.address !== owner)) {
        throw new SignerFailure('payment_signature_invalid', 'Authorization: Payment source does not match the wallet that signed the transaction');
      }
      return {
        kind: 'signer',
        signer: {
          ...base,
          paymentNetwork: claimed?.paymentNetwork ?? null,
          network: 'solana',
          address: owner,
          verified: true,
          proof: 'mpp_solana_transaction',
        },
      };
    }

    // EVM push-mode credential carrying a signed transaction: recover its sender when the envelope is a
    // standard one (Tempo's own transaction type is not, so the DID stays a claim there).
    if (claimed?.network === 'evm' && typeof payload.signature === 'string' && HEX.test(payload.signature)) {
      const sender = transactionSender(payload.signature);
      if (sender !== null) {
        if (sender !== claimed.address)
          throw new SignerFailure('payment_signature_invalid', 'Authorization: Payment source does not match the sender of the signed transaction');
        return {
          kind: 'signer',
          signer: { ...base, paymentNetwork: claimed.paymentNetwork, network: 'evm', address: sender, verified: true, proof: 'mpp_evm_transaction' },
        };
      }
    }

    if (claimed) {
      return {
        kind: 'signer',
        signer: {
          ...base,
          paymentNetwork: claimed.paymentNetwork,
          network: claimed.network,
          address: claimed.address,
          verified: false,
          proof: 'mpp_source_claim',
        },
      };
    }
    return { kind: 'signer', signer: { ...base, paymentNetwork: null, network: 'evm', address: null, verified: false, proof: 'no_wallet_signature' } };
  });
}
