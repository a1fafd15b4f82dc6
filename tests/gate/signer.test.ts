// Signer extraction unit tests: payment headers signed with ethers and tweetnacl test keys (valid, tampered,
// wrong domain, wrong signer, smart-wallet length, garbage) must give the right signer or a clear error code.
import { Transaction, Wallet } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { buildSignerConfig, extractPaymentSigner, hasPaymentHeader, USDC_BASE, USDC_BASE_SEPOLIA } from '../../middleware/signer';
import { b64, b64url, domainOf, mppAuthorization, signEip3009, solanaTransfer, solanaV2Header, v1Header, v2Header, SOLANA_MAINNET } from './payments';

const config = buildSignerConfig([USDC_BASE, USDC_BASE_SEPOLIA]);
const wallet = Wallet.createRandom();
const other = Wallet.createRandom();

function extract(headers: Record<string, string>) {
  return extractPaymentSigner(headers, config);
}

describe('x402 EVM (EIP-3009) signer recovery', () => {
  it('recovers the signer of a valid v2 PAYMENT-SIGNATURE and normalises it to lowercase', async () => {
    const payment = await signEip3009(wallet);
    const out = extract({ 'payment-signature': v2Header(payment) });
    expect(out).toEqual({
      kind: 'signer',
      signer: {
        rail: 'x402',
        header: 'payment-signature',
        scheme: 'exact',
        paymentNetwork: 'eip155:84532',
        network: 'evm',
        address: wallet.address.toLowerCase(),
        verified: true,
        proof: 'eip3009_ecdsa',
        idempotencyKey: `x402:eip155:84532:${payment.authorization.nonce}`,
      },
    });
  });

  it('recovers the signer of a v1 X-PAYMENT using the merchant domain for the named network', async () => {
    const payment = await signEip3009(wallet, { domain: domainOf(USDC_BASE) });
    const out = extract({ 'x-payment': v1Header(payment, 'base') });
    expect(out).toMatchObject({
      kind: 'signer',
      signer: { header: 'x-payment', paymentNetwork: 'eip155:8453', address: wallet.address.toLowerCase(), verified: true },
    });
  });

  it('rejects a tampered amount as payment_signature_invalid', async () => {
    const payment = await signEip3009(wallet, { value: '10000' });
    payment.authorization.value = '1';
    expect(extract({ 'payment-signature': v2Header(payment) })).toEqual({
      kind: 'invalid',
      code: 'payment_signature_invalid',
      header: 'PAYMENT-SIGNATURE',
      message: "PAYMENT-SIGNATURE signature was not made by authorization.from under the merchant's asset domain",
    });
  });

  it('rejects a signature made under a different domain name even though the client claims the right asset', async () => {
    const payment = await signEip3009(wallet, { domain: { ...domainOf(USDC_BASE_SEPOLIA), name: 'USD Coin' } });
    expect(extract({ 'payment-signature': v2Header(payment) })).toMatchObject({ kind: 'invalid', code: 'payment_signature_invalid' });
  });

  it('rejects an authorization whose from is not the wallet that signed it', async () => {
    const payment = await signEip3009(other, { from: wallet.address });
    expect(extract({ 'payment-signature': v2Header(payment) })).toMatchObject({ kind: 'invalid', code: 'payment_signature_invalid' });
  });

  it('carries a smart-wallet (> 65-byte) signature forward as an unverified claim of authorization.from', async () => {
    const payment = await signEip3009(wallet);
    payment.signature = '0x' + 'ab'.repeat(200);
    const out = extract({ 'payment-signature': v2Header(payment) });
    expect(out).toMatchObject({ kind: 'signer', signer: { address: wallet.address.toLowerCase(), verified: false, proof: 'smart_wallet_claim' } });
  });

  it('rejects a signature that is too short to be ECDSA', async () => {
    const payment = await signEip3009(wallet);
    payment.signature = payment.signature.slice(0, 60);
    expect(extract({ 'payment-signature': v2Header(payment) })).toMatchObject({ kind: 'invalid', code: 'payment_header_malformed' });
  });

  it('answers payment_unsupported for an asset the merchant has not configured', async () => {
    const payment = await signEip3009(wallet);
    const header = v2Header(payment, { ...USDC_BASE_SEPOLIA, asset: '0x1111111111111111111111111111111111111111' });
    expect(extract({ 'payment-signature': header })).toEqual({
      kind: 'invalid',
      code: 'payment_unsupported',
      header: 'PAYMENT-SIGNATURE',
      message: 'asset 0x1111111111111111111111111111111111111111 on eip155:84532 is not an asset this merchant accepts',
    });
  });

  it('answers payment_unsupported for a scheme other than exact', async () => {
    const payment = await signEip3009(wallet);
    const body = JSON.parse(Buffer.from(v2Header(payment), 'base64').toString());
    body.accepted.scheme = 'upto';
    expect(extract({ 'payment-signature': b64(body) })).toMatchObject({ kind: 'invalid', code: 'payment_unsupported' });
  });

  it.each([
    ['garbage base64', '!!!not-base64!!!'],
    ['base64 of non-JSON', Buffer.from('hello there').toString('base64')],
    ['a JSON array', b64([1, 2])],
    ['an unknown version', b64({ x402Version: 7 })],
    ['a missing payload', b64({ x402Version: 2, accepted: { scheme: 'exact', network: 'eip155:84532', asset: USDC_BASE_SEPOLIA.asset } })],
    [
      'a non-numeric value',
      b64({
        x402Version: 2,
        accepted: { scheme: 'exact', network: 'eip155:84532' },
        payload: {
          signature: '0x' + '11'.repeat(65),
          authorization: { from: wallet.address, to: wallet.address, value: '1e5', validAfter: '0', validBefore: '1', nonce: '0x' + '00'.repeat(32) },
        },
      }),
    ],
  ])('reports %s as payment_header_malformed without throwing', (_label, value) => {
    expect(extract({ 'payment-signature': value })).toMatchObject({ kind: 'invalid', code: 'payment_header_malformed', header: 'PAYMENT-SIGNATURE' });
  });

  it('treats a whitespace-only payment header as absent', () => {
    expect(extract({ 'payment-signature': '   ' })).toEqual({ kind: 'none' });
    expect(hasPaymentHeader({ 'payment-signature': '  ', authorization: 'Bearer abc' })).toBe(false);
    expect(hasPaymentHeader({ authorization: 'Payment abc' })).toBe(true);
  });
});

describe('x402 Solana exact signer recovery', () => {
  it('takes the TransferChecked owner whose ed25519 signature verifies (legacy message)', () => {
    const transfer = solanaTransfer();
    const out = extract({ 'payment-signature': solanaV2Header(transfer) });
    expect(out).toMatchObject({
      kind: 'signer',
      signer: { network: 'solana', address: transfer.ownerAddress, verified: true, proof: 'solana_ed25519', paymentNetwork: SOLANA_MAINNET },
    });
  });

  it('keeps the base58 owner verbatim (case-sensitive) for a v0 message', () => {
    const transfer = solanaTransfer({ version: 'v0' });
    const out = extract({ 'payment-signature': solanaV2Header(transfer) });
    expect(out.kind === 'signer' && out.signer.address).toBe(transfer.ownerAddress);
  });

  it('rejects a transaction whose amount was changed after signing', () => {
    const transfer = solanaTransfer({
      tamper: (m) => {
        m[m.length - 5] ^= 0xff;
      },
    });
    expect(extract({ 'payment-signature': solanaV2Header(transfer) })).toMatchObject({ kind: 'invalid', code: 'payment_signature_invalid' });
  });

  it('rejects a transfer signed by a key other than its owner', () => {
    const transfer = solanaTransfer({ signer: nacl.sign.keyPair() });
    expect(extract({ 'payment-signature': solanaV2Header(transfer) })).toMatchObject({ kind: 'invalid', code: 'payment_signature_invalid' });
  });

  it('reports a truncated transaction as malformed', () => {
    const transfer = solanaTransfer();
    const truncated = { ...transfer, transaction: Buffer.from(transfer.transaction, 'base64').subarray(0, 150).toString('base64') };
    expect(extract({ 'payment-signature': solanaV2Header(truncated) })).toMatchObject({ kind: 'invalid', code: 'payment_header_malformed' });
  });
});

describe('MPP Authorization: Payment', () => {
  it('takes the source DID as an unconfirmed claim when the payload cannot confirm it', () => {
    const out = extract({
      authorization: mppAuthorization({ source: `did:pkh:eip155:4217:${wallet.address}`, payload: { type: 'hash', hash: '0x' + '12'.repeat(32) } }),
    });
    expect(out).toMatchObject({
      kind: 'signer',
      signer: {
        rail: 'mpp',
        scheme: 'tempo',
        network: 'evm',
        paymentNetwork: 'eip155:4217',
        address: wallet.address.toLowerCase(),
        verified: false,
        proof: 'mpp_source_claim',
      },
    });
  });

  it('confirms the source with the sender of a signed EVM transaction in the payload', async () => {
    const signed = await wallet.signTransaction(
      Transaction.from({ to: other.address, value: 1n, chainId: 4217n, nonce: 0, gasLimit: 21000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n, type: 2 }),
    );
    const ok = extract({
      authorization: mppAuthorization({ source: `did:pkh:eip155:4217:${wallet.address}`, payload: { type: 'transaction', signature: signed } }),
    });
    expect(ok).toMatchObject({ kind: 'signer', signer: { address: wallet.address.toLowerCase(), verified: true, proof: 'mpp_evm_transaction' } });
    const forged = extract({
      authorization: mppAuthorization({ source: `did:pkh:eip155:4217:${other.address}`, payload: { type: 'transaction', signature: signed } }),
    });
    expect(forged).toMatchObject({ kind: 'invalid', code: 'payment_signature_invalid', header: 'Authorization' });
  });

  it('confirms a Solana source with the signed transfer in the payload', () => {
    const transfer = solanaTransfer();
    const source = `did:pkh:solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:${transfer.ownerAddress}`;
    expect(extract({ authorization: mppAuthorization({ source, payload: { transaction: transfer.transaction } }) })).toMatchObject({
      kind: 'signer',
      signer: { network: 'solana', address: transfer.ownerAddress, verified: true },
    });
    const wrong = `did:pkh:solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:${bs58.encode(nacl.sign.keyPair().publicKey)}`;
    expect(extract({ authorization: mppAuthorization({ source: wrong, payload: { transaction: transfer.transaction } }) })).toMatchObject({
      kind: 'invalid',
      code: 'payment_signature_invalid',
    });
  });

  it('gives signer.address null for a card / shared-payment-token rail', () => {
    const out = extract({ authorization: mppAuthorization({ challenge: { id: 'ch_1', method: 'stripe', intent: 'charge' }, payload: { spt: 'spt_123' } }) });
    expect(out).toMatchObject({ kind: 'signer', signer: { rail: 'mpp', address: null, proof: 'no_wallet_signature', idempotencyKey: 'mpp:ch_1' } });
  });

  it('reports a source that is not a did:pkh as malformed, and undecodable credentials too', () => {
    expect(extract({ authorization: mppAuthorization({ source: 'did:web:example.com' }) })).toMatchObject({
      kind: 'invalid',
      code: 'payment_header_malformed',
    });
    expect(extract({ authorization: 'Payment %%%' })).toMatchObject({ kind: 'invalid', code: 'payment_header_malformed' });
    expect(extract({ authorization: `Payment ${b64url({ payload: {} })}` })).toMatchObject({ kind: 'invalid', code: 'payment_header_malformed' });
  });

  it('ignores other authorization schemes', () => {
    expect(extract({ authorization: 'Bearer abc' })).toEqual({ kind: 'none' });
  });
});

describe('signer configuration', () => {
  it('names the bad entry when an asset domain is misconfigured', () => {
    expect(() => buildSignerConfig([{ ...USDC_BASE, network: 'base' }])).toThrow(
      'x402Assets[0].network must be a CAIP-2 EVM network such as "eip155:8453" (got "base")',
    );
    expect(() => buildSignerConfig([{ ...USDC_BASE, asset: '0x12' }])).toThrow('x402Assets[0].asset must be a 0x-prefixed 40-hex token address');
  });
});
