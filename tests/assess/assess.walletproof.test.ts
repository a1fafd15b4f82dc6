// POST /v1/assess with a Sign-In-With-X wallet proof: real ethers and tweetnacl signatures, the server's
// clock injected, the nonce spent once in Redis (also across two app instances sharing it), and every
// structural problem a 400 naming the field.
import request from 'supertest';
import { Wallet } from 'ethers';
import nacl from 'tweetnacl';
import bs58 from 'bs58';
import { createHarness, createMerchant, useClockedHarness, type Harness } from '../support/harness';
import { encodeProof, evmProof, freshNonce, solanaProof } from '../support/siwx';
import { parseWalletProof, siwxMessage, WalletProofService } from '../../server/services/walletProof';
import { MemoryKeyValueStore } from '../../server/stores/kv';
import { ASSESS_TABLES, mintCredential, createOperator } from './seed';

// Anchored at real time (to the minute): the harness's scoring jobs stamp their rows with this clock, and rows
// from the past would look stale to the next test file's re-scorer.
const NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
const at = (offsetMs: number) => new Date(Date.parse(NOW) + offsetMs).toISOString();
const DOMAIN = 'shop.example.com';
const ORIGIN = 'https://shop.example.com';
const { h, clock } = useClockedHarness(NOW, ASSESS_TABLES);

let key: string;
beforeEach(async () => {
  ({ apiKey: key } = await createMerchant(h.deps, { tier: 'enterprise' }));
});

const assessOn = (app: Harness['app'], body: object) => request(app).post('/v1/assess').set('X-API-Key', key).send(body);
const assess = (body: object) => assessOn(h.app, body);
const proofOf = (header: string, extra: Record<string, unknown> = {}) => ({ type: 'siwx', header, domain: DOMAIN, uri: ORIGIN, ...extra });
const now = () => clock.now();

describe('a valid proof', () => {
  it('is verified for an EVM wallet signed with personal_sign over the EIP-4361 text', async () => {
    const wallet = Wallet.createRandom();
    const { header } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: `${ORIGIN}/paid`, issuedAt: now() });
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(header) });
    expect(res.status).toBe(200);
    expect(res.body.wallet_proof).toEqual({
      type: 'siwx',
      verified: true,
      address: wallet.address.toLowerCase(),
      chain_id: 'eip155:8453',
      expires_at: at(5 * 60_000),
    });
    expect(res.body.decision).toBe('allow');
  });

  it('is verified without a statement and with resources (the EIP-4361 optional parts)', async () => {
    const wallet = Wallet.createRandom();
    const { header } = await evmProof(wallet as unknown as Wallet, {
      domain: DOMAIN,
      uri: ORIGIN,
      issuedAt: now(),
      statement: null,
      resources: [`${ORIGIN}/a`, `${ORIGIN}/b`],
      chainId: 'eip155:1',
    });
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(header) });
    expect(res.body.wallet_proof).toMatchObject({ verified: true, chain_id: 'eip155:1' });
  });

  it('is verified for a Solana wallet signed with ed25519 over the Solana layout', async () => {
    const keys = nacl.sign.keyPair();
    const address = bs58.encode(keys.publicKey);
    const { header } = solanaProof(keys, { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), statement: null });
    const res = await assess({ address, wallet_proof: proofOf(header) });
    expect(res.status).toBe(200);
    expect(res.body.wallet_proof).toEqual({
      type: 'siwx',
      verified: true,
      address,
      chain_id: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      expires_at: at(5 * 60_000),
    });
  });

  it('accepts an issuedAt slightly ahead of the server clock (small skew)', async () => {
    const wallet = Wallet.createRandom();
    const issuedAt = new Date(now().getTime() + 20_000);
    const { header } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt });
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(header) });
    expect(res.body.wallet_proof.verified).toBe(true);
  });

  it('is reported as ignored in token mode', async () => {
    const op = await createOperator(h.deps);
    const { token } = await mintCredential(h.deps, op);
    const wallet = Wallet.createRandom();
    const { header } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const res = await assess({ operator_token: token, wallet_proof: proofOf(header) });
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty('wallet_proof');
    expect(res.body.warnings).toEqual([{ field: 'wallet_proof', message: 'ignored: operator_token identifies the operator' }]);
  });
});

describe('a proof that is not accepted gets a verdict with a specific reason', () => {
  const cases: Array<[string, (w: Wallet) => Promise<string>, string, string]> = [
    [
      'expired',
      (w) =>
        evmProof(w, { domain: DOMAIN, uri: ORIGIN, issuedAt: new Date(now().getTime() - 6 * 60_000), expirationTime: new Date(now().getTime() - 60_000) }).then(
          (p) => p.header,
        ),
      'expired',
      `The proof expired at ${at(-60_000)}; sign a new one.`,
    ],
    [
      'without expirationTime, older than 5 minutes',
      (w) => evmProof(w, { domain: DOMAIN, uri: ORIGIN, issuedAt: new Date(now().getTime() - 5 * 60_000 - 1), expirationTime: null }).then((p) => p.header),
      'expired',
      `The proof expired at ${at(-1)}; sign a new one.`,
    ],
    [
      'valid for more than 5 minutes',
      (w) => evmProof(w, { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), expirationTime: new Date(now().getTime() + 5 * 60_000 + 1000) }).then((p) => p.header),
      'expiry_too_long',
      "The proof's expirationTime is more than 5 minutes after its issuedAt.",
    ],
    [
      'signed for another domain',
      (w) => evmProof(w, { domain: 'evil.example.com', uri: ORIGIN, issuedAt: now() }).then((p) => p.header),
      'domain_mismatch',
      'The proof was signed for domain "evil.example.com", not "shop.example.com".',
    ],
    [
      'with a uri on another origin',
      (w) => evmProof(w, { domain: DOMAIN, uri: 'https://evil.example.com/paid', issuedAt: now() }).then((p) => p.header),
      'uri_mismatch',
      "The proof's uri is on https://evil.example.com, not https://shop.example.com.",
    ],
    [
      'with a uri on another scheme',
      (w) => evmProof(w, { domain: DOMAIN, uri: 'http://shop.example.com/', issuedAt: now() }).then((p) => p.header),
      'uri_mismatch',
      "The proof's uri is on http://shop.example.com, not https://shop.example.com.",
    ],
    [
      'issued in the future',
      (w) => evmProof(w, { domain: DOMAIN, uri: ORIGIN, issuedAt: new Date(now().getTime() + 60_000) }).then((p) => p.header),
      'issued_in_future',
      "The proof's issuedAt is in the future; sign with the current time.",
    ],
    [
      'not valid before a later time',
      (w) => evmProof(w, { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), notBefore: new Date(now().getTime() + 120_000) }).then((p) => p.header),
      'not_yet_valid',
      "The proof's notBefore is in the future.",
    ],
  ];
  it.each(cases)('%s', async (_name, build, reason, message) => {
    const wallet = Wallet.createRandom() as unknown as Wallet;
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(await build(wallet)) });
    expect(res.status).toBe(200);
    expect(res.body.wallet_proof).toEqual({ type: 'siwx', verified: false, address: wallet.address.toLowerCase(), chain_id: 'eip155:8453', reason, message });
  });

  it('signed by another key than the address it names', async () => {
    const named = Wallet.createRandom();
    const { header } = await evmProof(Wallet.createRandom() as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), address: named.address });
    const res = await assess({ address: named.address, wallet_proof: proofOf(header) });
    expect(res.body.wallet_proof).toEqual({
      type: 'siwx',
      verified: false,
      address: named.address.toLowerCase(),
      chain_id: 'eip155:8453',
      reason: 'signature_invalid',
      message: "The signature does not match the message rebuilt from the proof's fields and its address.",
    });
  });

  it('with a field changed after signing', async () => {
    const wallet = Wallet.createRandom();
    const { payload } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(encodeProof({ ...payload, statement: 'Something else' })) });
    expect(res.body.wallet_proof.reason).toBe('signature_invalid');
  });

  it('for a Solana wallet signed by another key', async () => {
    const named = bs58.encode(nacl.sign.keyPair().publicKey);
    const { header } = solanaProof(nacl.sign.keyPair(), { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), address: named });
    const res = await assess({ address: named, wallet_proof: proofOf(header) });
    expect(res.body.wallet_proof).toMatchObject({ verified: false, reason: 'signature_invalid', address: named });
  });

  it('proving a different wallet than the identity', async () => {
    const signer = Wallet.createRandom();
    const claimed = Wallet.createRandom();
    const { header } = await evmProof(signer as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const res = await assess({ address: claimed.address, wallet_proof: proofOf(header) });
    expect(res.body.wallet_proof).toEqual({
      type: 'siwx',
      verified: false,
      address: signer.address.toLowerCase(),
      chain_id: 'eip155:8453',
      reason: 'address_mismatch',
      message: 'The proof was signed by a different wallet than the one presented as the identity.',
    });
  });
});

describe('nonce replay', () => {
  it('accepts a proof once and reports nonce_reused on the second use', async () => {
    const wallet = Wallet.createRandom();
    const { header } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const first = await assess({ address: wallet.address, wallet_proof: proofOf(header) });
    expect(first.body.wallet_proof.verified).toBe(true);
    const second = await assess({ address: wallet.address, wallet_proof: proofOf(header) });
    expect(second.body.wallet_proof).toEqual({
      type: 'siwx',
      verified: false,
      address: wallet.address.toLowerCase(),
      chain_id: 'eip155:8453',
      reason: 'nonce_reused',
      message: "This proof's nonce was already used; sign a new proof with a fresh nonce.",
    });
  });

  it('spends the nonce across two app instances sharing Redis, even under concurrent use', async () => {
    const other = await createHarness({ redisPrefix: h.prefix, overrides: { clock } });
    try {
      const wallet = Wallet.createRandom();
      const { header } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
      const answers = await Promise.all([
        assessOn(h.app, { address: wallet.address, wallet_proof: proofOf(header) }),
        assessOn(other.app, { address: wallet.address, wallet_proof: proofOf(header) }),
      ]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      expect(answers.map((r) => r.body.wallet_proof.verified).sort()).toEqual([false, true]);
      expect(answers.find((r) => !r.body.wallet_proof.verified)!.body.wallet_proof.reason).toBe('nonce_reused');
    } finally {
      await other.close();
    }
  });

  it('never lets an invalid proof spend a nonce (a valid proof with the same nonce still passes)', async () => {
    const wallet = Wallet.createRandom();
    const nonce = freshNonce();
    const forged = await evmProof(Wallet.createRandom() as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), nonce, address: wallet.address });
    expect((await assess({ address: wallet.address, wallet_proof: proofOf(forged.header) })).body.wallet_proof.reason).toBe('signature_invalid');
    const real = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now(), nonce });
    expect((await assess({ address: wallet.address, wallet_proof: proofOf(real.header) })).body.wallet_proof.verified).toBe(true);
  });
});

describe('a malformed proof is a 400 naming the field, never a 5xx', () => {
  const badRequest = (details: Array<{ field: string; message: string }>) => ({
    error: { code: 'bad_request', message: `Invalid request: ${details.map((d) => d.field).join(', ')}`, details },
  });

  it.each([
    ['not base64', 'not base64 at all!'],
    ['base64 of something that is not JSON', Buffer.from('hello').toString('base64')],
    ['base64 of a JSON array', Buffer.from('[1,2]').toString('base64')],
  ])('%s', async (_name, header) => {
    const res = await assess({ address: Wallet.createRandom().address, wallet_proof: proofOf(header) });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(badRequest([{ field: 'wallet_proof.header', message: 'is not base64-encoded JSON of an object' }]));
  });

  it('names each missing or ill-formed payload field', async () => {
    const wallet = Wallet.createRandom();
    const { payload } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const { nonce: _n, ...withoutNonce } = payload;
    const res = await assess({
      address: wallet.address,
      wallet_proof: proofOf(encodeProof({ ...withoutNonce, issuedAt: 'yesterday', version: 2, chainId: 'cosmos:hub' })),
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(
      badRequest([
        { field: 'wallet_proof.header.version', message: 'must be a non-empty string of at most 1024 characters' },
        { field: 'wallet_proof.header.nonce', message: 'is required' },
        { field: 'wallet_proof.header.issuedAt', message: 'must be an ISO 8601 timestamp such as "2026-01-15T10:30:00.000Z"' },
        { field: 'wallet_proof.header.chainId', message: 'must be a CAIP-2 chain id such as "eip155:8453" or "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"' },
      ]),
    );
  });

  it('rejects a line break smuggled into a signed field', async () => {
    const wallet = Wallet.createRandom();
    const { payload } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(encodeProof({ ...payload, statement: 'a\nURI: https://evil.example.com' })) });
    expect(res.body).toEqual(badRequest([{ field: 'wallet_proof.header.statement', message: 'must not contain line breaks or control characters' }]));
  });

  it('rejects a nonce that is not 32 hex characters and a type that does not fit the chain', async () => {
    const wallet = Wallet.createRandom();
    const { payload } = await evmProof(wallet as unknown as Wallet, { domain: DOMAIN, uri: ORIGIN, issuedAt: now() });
    const res = await assess({ address: wallet.address, wallet_proof: proofOf(encodeProof({ ...payload, nonce: 'abc', type: 'ed25519' })) });
    expect(res.body).toEqual(
      badRequest([
        { field: 'wallet_proof.header.nonce', message: 'must be 32 hexadecimal characters' },
        { field: 'wallet_proof.header.type', message: 'must be "eip191" for eip155:8453' },
      ]),
    );
  });

  it('rejects a wallet_proof without the merchant origin, and any wallet_proof in test mode', async () => {
    const res = await assess({ address: Wallet.createRandom().address, wallet_proof: { type: 'siwx', header: 'e30=' } });
    expect(res.body).toEqual(
      badRequest([
        { field: 'wallet_proof.domain', message: 'must be the host (and port, if not the default) of your public origin, e.g. "shop.example.com"' },
        { field: 'wallet_proof.uri', message: 'must be your public origin, e.g. "https://shop.example.com"' },
        { field: 'wallet_proof.header.domain', message: 'is required' },
        { field: 'wallet_proof.header.address', message: 'is required' },
        { field: 'wallet_proof.header.uri', message: 'is required' },
        { field: 'wallet_proof.header.version', message: 'is required' },
        { field: 'wallet_proof.header.chainId', message: 'is required' },
        { field: 'wallet_proof.header.nonce', message: 'is required' },
        { field: 'wallet_proof.header.issuedAt', message: 'is required' },
        { field: 'wallet_proof.header.signature', message: 'is required' },
      ]),
    );
    const test = await assess({ address: '0x0000000000000000000000000000000000000001', test: true, wallet_proof: proofOf('e30=') });
    expect(test.status).toBe(400);
    expect(test.body.error.details).toContainEqual({
      field: 'wallet_proof',
      message: 'is not available in test mode (the reserved test addresses cannot sign)',
    });
  });
});

describe('the worked example of docs/wallet-proof.md', () => {
  // The same fields, message and signature as the document, so the walkthrough an agent developer follows
  // stays true.
  const payload = {
    domain: 'shop.example.com',
    address: '0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A',
    uri: 'https://shop.example.com/buy/grinder',
    version: '1',
    chainId: 'eip155:8453',
    type: 'eip191',
    nonce: '4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a99',
    issuedAt: '2026-03-02T12:00:00.000Z',
    expirationTime: '2026-03-02T12:05:00.000Z',
    statement: 'Sign in to prove you control this wallet.',
    signature: '0x86d457c9270c717e9f5cd1ccf18383e1cf8a3cfb273c8ddac4a6d2307d9843e763a9d7e23c1006f9eb06b8be7131f1ea4ed1bb70f178675e02cf26c14a75a59d1b',
  };
  const message = [
    'shop.example.com wants you to sign in with your Ethereum account:',
    '0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A',
    '',
    'Sign in to prove you control this wallet.',
    '',
    'URI: https://shop.example.com/buy/grinder',
    'Version: 1',
    'Chain ID: 8453',
    'Nonce: 4f3c2a1b0e9d8c7b6a5f4e3d2c1b0a99',
    'Issued At: 2026-03-02T12:00:00.000Z',
    'Expiration Time: 2026-03-02T12:05:00.000Z',
  ].join('\n');

  it('is signed by the documented test key, and verifies once inside its window', async () => {
    expect(new Wallet('0x' + '11'.repeat(32)).address).toBe(payload.address);
    expect(await new Wallet('0x' + '11'.repeat(32)).signMessage(message)).toBe(payload.signature);
    const problems: Array<{ field: string; message: string }> = [];
    const proof = parseWalletProof({ type: 'siwx', header: encodeProof(payload), domain: DOMAIN, uri: ORIGIN }, problems);
    expect(problems).toEqual([]);
    expect(siwxMessage(proof!.payload)).toBe(message);
    const service = new WalletProofService({ kv: new MemoryKeyValueStore(), now: () => new Date('2026-03-02T12:01:00.000Z') });
    const claimed = { network: 'evm' as const, address: payload.address.toLowerCase() };
    expect(await service.verify(proof!, claimed)).toEqual({
      type: 'siwx',
      verified: true,
      address: claimed.address,
      chain_id: 'eip155:8453',
      expires_at: '2026-03-02T12:05:00.000Z',
    });
    expect(await service.verify(proof!, claimed)).toMatchObject({ verified: false, reason: 'nonce_reused' });
  });
});
