// Secret generation, hashing and comparison, PII encryption, and pairwise operator handles.
import crypto from 'node:crypto';
import bs58 from 'bs58';
import { verifyMessage } from 'ethers';
import type { AddressFamily } from '../shared/types';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 text of `bytes` random bytes (32 bytes → 43 characters), fixed length for a given byte count. */
export function randomBase62(bytes = 32): string {
  let n = BigInt('0x' + crypto.randomBytes(bytes).toString('hex'));
  const length = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  for (let i = 0; i < length; i++) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

/** A new secret with a type prefix: `as_live_…` API keys, `opc_…` credentials, `ort_…` refresh tokens. */
export function newSecret(prefix: string, bytes = 32): string {
  return prefix + randomBase62(bytes);
}

export function sha256Hex(value: string): string {
  return crypto.createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time equality of two strings (lengths compared via fixed-size digests). */
export function safeEqual(a: string, b: string): boolean {
  const da = crypto.createHash('sha256').update(a).digest();
  const db = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(da, db) && a.length === b.length;
}

/** Short, non-secret display prefix of a secret: the type prefix plus four characters. */
export function displayPrefix(secret: string): string {
  const cut = secret.indexOf('_', secret.startsWith('as_live_') ? 3 : 0);
  return secret.slice(0, (cut >= 0 ? cut + 1 : 0) + 4);
}

export function hmacSha256(key: string | Buffer, message: string): Buffer {
  return crypto.createHmac('sha256', key).update(message, 'utf8').digest();
}

/** Pairwise operator handle: stable per (operator, merchant), so two merchants cannot join their customers; not reversible. */
export function operatorHandle(serverSecret: string, operatorId: string, merchantAccountId: string): string {
  const mac = hmacSha256(serverSecret, `${operatorId}\u0000${merchantAccountId}`);
  return 'oph_' + bs58.encode(mac).slice(0, 22);
}

/** AES-256-GCM; output is base64 of iv(12) ‖ tag(16) ‖ ciphertext. */
export function encryptJson(key: Buffer, value: unknown): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

export function decryptJson<T = unknown>(key: Buffer, payload: string): T {
  const raw = Buffer.from(payload, 'base64');
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  return JSON.parse(text) as T;
}

/** DER prefix of an ed25519 SubjectPublicKeyInfo; the 32 key bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Whether `signature` over `message` was made by the wallet `address`: EIP-191 personal_sign (ethers) for EVM,
 * ed25519 over the UTF-8 message for Solana (Node's native ed25519: a pure-JS verify costs tens of times more
 * CPU on the request thread). Never throws: anything malformed is simply not a valid signature.
 */
export function walletSignatureValid(network: AddressFamily, address: string, message: string, signature: string | Uint8Array): boolean {
  try {
    if (network === 'evm') return typeof signature === 'string' && verifyMessage(message, signature).toLowerCase() === address.toLowerCase();
    const key = crypto.createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(bs58.decode(address))]), format: 'der', type: 'spki' });
    const bytes = typeof signature === 'string' ? bs58.decode(signature) : signature;
    return crypto.verify(null, Buffer.from(message, 'utf8'), key, Buffer.from(bytes));
  } catch {
    return false;
  }
}
