// REPUTATION_CHAINS_FILE validation: a bad file stops start-up with a message naming the entry and field.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChainsFileError, loadChainsFile, parseChains } from '../../server/chain/config';

const valid = {
  name: 'base',
  rpcUrl: 'https://mainnet.base.org',
  chainId: 8453,
  startBlock: 30_000_000,
  confirmations: 12,
  identityRegistry: '0x8004A169FB4a3325136EB29fA0ceB6D2e539a432',
  reputationRegistry: '0x8004BAa17C55a88189AE136b182e5fdA19dE9b63',
  usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
};

describe('chains file', () => {
  it('accepts a valid entry, lowercases addresses and fills defaults', () => {
    expect(parseChains([valid])).toEqual([
      {
        ...valid,
        identityRegistry: '0x8004a169fb4a3325136eb29fa0ceb6d2e539a432',
        reputationRegistry: '0x8004baa17c55a88189ae136b182e5fda19de9b63',
        usdc: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
        maxBlockRange: 2000,
        pollIntervalSeconds: 15,
        maxIndexLagSeconds: 900,
        rpcTimeoutMs: 10000,
      },
    ]);
  });

  it('rejects chain names outside shared/chains.ts (and solana, which has no EVM indexer)', () => {
    expect(() => parseChains([{ ...valid, name: 'dogechain' }])).toThrow(
      'Invalid REPUTATION_CHAINS_FILE (chains): 0.name: must be one of [base, ethereum, arbitrum, optimism, polygon, tempo]',
    );
    expect(() => parseChains([{ ...valid, name: 'solana' }])).toThrow(ChainsFileError);
  });

  it('names the offending field for bad addresses, types and duplicates', () => {
    expect(() => parseChains([{ ...valid, usdc: '0x123' }])).toThrow('0.usdc: must be a 0x-prefixed 20-byte hex address');
    expect(() => parseChains([{ ...valid, startBlock: '5' }])).toThrow('0.startBlock');
    expect(() => parseChains([{ ...valid, rpcUrl: 'ws://x' }])).toThrow('0.rpcUrl');
    expect(() => parseChains([valid, valid])).toThrow('1: contains a duplicate value');
    expect(() => parseChains({})).toThrow('root: must be an array');
  });

  it('reads the file, and reports a missing file or invalid JSON', () => {
    expect(loadChainsFile(null)).toEqual([]);
    const file = path.join(os.tmpdir(), `kya-chains-test-${process.pid}.json`);
    fs.writeFileSync(file, JSON.stringify([valid]));
    expect(loadChainsFile(file)).toHaveLength(1);
    fs.writeFileSync(file, '{nope');
    expect(() => loadChainsFile(file)).toThrow(/is not valid JSON/);
    fs.unlinkSync(file);
    expect(() => loadChainsFile(file)).toThrow(`Invalid REPUTATION_CHAINS_FILE (${file}): cannot be read (ENOENT)`);
  });
});
