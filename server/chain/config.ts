// The chains the reputation indexer reads, from the JSON file named by REPUTATION_CHAINS_FILE: one entry per
// chain with its JSON-RPC URL, chain id, start block, confirmation depth and contract addresses. Validated
// once at boot with joi; a bad file stops start-up with a message naming the entry and field.
import fs from 'node:fs';
import Joi from 'joi';
import { CHAINS, type Chain } from '../../shared/chains';

export interface ChainConfig {
  name: Chain;
  rpcUrl: string;
  chainId: number;
  /** First block to read (the registries' deployment block is a good choice). */
  startBlock: number;
  /** Blocks behind the head that are considered final; nothing newer is indexed (reorg safety). */
  confirmations: number;
  /** Contract addresses, lowercase. */
  identityRegistry: string;
  reputationRegistry: string;
  usdc: string;
  /** Widest block range requested in one eth_getLogs call. Default 2000. */
  maxBlockRange: number;
  /** How often the indexer job runs for this chain. Default 15 s. */
  pollIntervalSeconds: number;
  /** Scores for this chain are only (re)computed while the indexer synced within this window. Default 900 s. */
  maxIndexLagSeconds: number;
  /** Per-request JSON-RPC timeout. Default 10000 ms. */
  rpcTimeoutMs: number;
}

const address = Joi.string()
  .pattern(/^0x[0-9a-fA-F]{40}$/)
  .messages({ 'string.pattern.base': '{{#label}} must be a 0x-prefixed 20-byte hex address' });

const entry = Joi.object({
  name: Joi.string()
    .valid(...CHAINS.filter((c) => c !== 'solana'))
    .required(),
  rpcUrl: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .required(),
  chainId: Joi.number().integer().min(1).required(),
  startBlock: Joi.number().integer().min(0).required(),
  confirmations: Joi.number().integer().min(0).max(1000).required(),
  identityRegistry: address.required(),
  reputationRegistry: address.required(),
  usdc: address.required(),
  maxBlockRange: Joi.number().integer().min(1).max(100_000).default(2000),
  pollIntervalSeconds: Joi.number().integer().min(1).max(86_400).default(15),
  maxIndexLagSeconds: Joi.number().integer().min(1).default(900),
  rpcTimeoutMs: Joi.number().integer().min(100).max(120_000).default(10_000),
});

const fileSchema = Joi.array().items(entry).unique('name');

export class ChainsFileError extends Error {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`Invalid REPUTATION_CHAINS_FILE (${file}): ${detail}`);
    this.name = 'ChainsFileError';
  }
}

/** Validates already-parsed chain entries (also used by tests that build the list in memory). */
export function parseChains(value: unknown, source = 'chains'): ChainConfig[] {
  const { error, value: chains } = fileSchema.validate(value, { abortEarly: true, convert: false }) as { error?: Joi.ValidationError; value: unknown };
  if (error) {
    const d = error.details[0];
    // "[0].name must be …" → "0.name: must be …": the path names entry and field once.
    const message = d.message.replace(/^"[^"]*" /, '').replace(/"/g, '');
    throw new ChainsFileError(source, `${d.path.join('.') || 'root'}: ${message}`);
  }
  return (chains as ChainConfig[]).map((c) => ({
    ...c,
    identityRegistry: c.identityRegistry.toLowerCase(),
    reputationRegistry: c.reputationRegistry.toLowerCase(),
    usdc: c.usdc.toLowerCase(),
  }));
}

/** Reads and validates the chains file; no file configured means no chains (reputation from captures only). */
export function loadChainsFile(file: string | null): ChainConfig[] {
  if (!file) return [];
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ChainsFileError(file, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new ChainsFileError(file, `is not valid JSON (${(err as Error).message})`);
  }
  return parseChains(parsed, file);
}
