// The gate's own EVM recovery (noble) agrees with ethers on what ethers signs: EIP-712 TransferWithAuthorization
// (65-byte and EIP-2098 64-byte signatures) and the sender of every standard transaction envelope.
import crypto from 'node:crypto';
import { Signature, Transaction, Wallet, type TransactionLike } from 'ethers';
import { recoverTypedDataSigner, transactionSender } from '../../middleware/evm';
import { TRANSFER_WITH_AUTHORIZATION_TYPES, USDC_BASE } from '../../middleware/signer';

const DOMAIN = { name: USDC_BASE.name, version: USDC_BASE.version, chainId: 8453n, verifyingContract: USDC_BASE.asset };
const wallet = Wallet.createRandom();
const other = Wallet.createRandom();

function authorization(from = wallet.address) {
  return { from, to: other.address, value: '1000000', validAfter: '0', validBefore: '1999999999', nonce: '0x' + crypto.randomBytes(32).toString('hex') };
}

describe('EIP-712 recovery', () => {
  it('recovers the signer of 65-byte and 64-byte (EIP-2098) signatures like ethers', async () => {
    for (let i = 0; i < 5; i++) {
      const message = authorization();
      const signature = await wallet.signTypedData(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message);
      expect(recoverTypedDataSigner(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message, signature)).toBe(wallet.address.toLowerCase());
      const compact = Signature.from(signature).compactSerialized;
      expect(recoverTypedDataSigner(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message, compact)).toBe(wallet.address.toLowerCase());
    }
  });

  it('recovers some other address when any signed field or the domain differs', async () => {
    const message = authorization();
    const signature = await wallet.signTypedData(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message);
    expect(recoverTypedDataSigner(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, { ...message, value: '1000001' }, signature)).not.toBe(
      wallet.address.toLowerCase(),
    );
    expect(recoverTypedDataSigner({ ...DOMAIN, name: 'USDC' }, TRANSFER_WITH_AUTHORIZATION_TYPES, message, signature)).not.toBe(wallet.address.toLowerCase());
  });

  it('refuses a bad recovery byte and a non-canonical s', async () => {
    const message = authorization();
    const signature = await wallet.signTypedData(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message);
    expect(() => recoverTypedDataSigner(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message, signature.slice(0, -2) + '05')).toThrow();
    const highS = signature.slice(0, 66) + 'f' + signature.slice(67);
    expect(() => recoverTypedDataSigner(DOMAIN, TRANSFER_WITH_AUTHORIZATION_TYPES, message, highS)).toThrow('non-canonical');
  });
});

describe('transaction sender', () => {
  const base = { to: other.address, value: 12345n, nonce: 7, gasLimit: 21000n, data: '0x' + 'ab'.repeat(70) };
  const cases: Array<[string, TransactionLike]> = [
    ['legacy without chain id', { ...base, type: 0, gasPrice: 10n }],
    ['legacy with EIP-155 chain id', { ...base, type: 0, gasPrice: 10n, chainId: 8453n }],
    ['EIP-2930', { ...base, type: 1, gasPrice: 10n, chainId: 1n, accessList: [{ address: other.address, storageKeys: ['0x' + '00'.repeat(32)] }] }],
    ['EIP-1559', { ...base, type: 2, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n, chainId: 4217n }],
    ['EIP-7702', { ...base, type: 4, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n, chainId: 1n, authorizationList: [] }],
  ];

  it.each(cases)('recovers the sender of a signed %s transaction like ethers', async (_name, tx) => {
    const signed = await wallet.signTransaction(Transaction.from(tx));
    expect(Transaction.from(signed).from!.toLowerCase()).toBe(wallet.address.toLowerCase());
    expect(transactionSender(signed)).toBe(wallet.address.toLowerCase());
  });

  it('answers null for an unsigned, truncated or unknown envelope', async () => {
    const signed = await wallet.signTransaction(Transaction.from(cases[3][1]));
    expect(transactionSender(Transaction.from(cases[3][1]).unsignedSerialized)).toBeNull();
    expect(transactionSender(signed.slice(0, -10))).toBeNull();
    expect(transactionSender('0x76' + signed.slice(4))).toBeNull();
    expect(transactionSender('0x')).toBeNull();
    expect(transactionSender('0xzz')).toBeNull();
  });
});
