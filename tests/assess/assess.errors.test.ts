import request from 'supertest';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { ASSESS_TABLES, evmAddress } from './seed';

describe('POST /v1/assess rejects bad input with a 400 naming the field', () => {
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    h = await createHarness({ env: { BODY_LIMIT: '1mb' } });
    await resetTables(h.deps, ASSESS_TABLES);
    ({ apiKey: key } = await createMerchant(h.deps, { tier: 'enterprise' }));
  });
  afterAll(() => h.close());

  const assess = (body: unknown) =>
    request(h.app)
      .post('/v1/assess')
      .set('X-API-Key', key)
      .send(body as object);
  const IDENTITY = 'Provide a wallet address (EVM 0x + 40 hex, or Solana base58) in "address", or an operator credential (opc_…) in "operator_token".';
  // A malformed credential or wallet names the header an agent sent it in as well as the body field.
  const TOKEN =
    'The operator credential (X-Operator-Token header, or "operator_token" in an assess request) is malformed: an operator credential starts with opc_.';
  const ADDRESS =
    'The wallet address (X-Wallet-Address header, or "address" in an assess request) is malformed: expected EVM (0x + 40 hex) or Solana (base58).';

  it('answers 401 signup_required without an API key', async () => {
    const res = await request(h.app).post('/v1/assess').send({ address: evmAddress() });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: { code: 'signup_required', message: 'A valid API key is required (X-API-Key header).', signup_url: 'https://kya.dev/signup' },
    });
  });

  it('answers invalid_identity when neither address nor operator_token is given', async () => {
    const res = await assess({ policy: { require_kyc: true } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'invalid_identity', message: IDENTITY, details: [{ field: 'address', message: 'address or operator_token is required' }] },
    });
  });

  it.each([
    ['a number', 123, 'must be a string'],
    ['41 hex digits', '0x' + 'a'.repeat(41), 'is not a valid EVM (0x + 40 hex) or Solana (base58, 32 bytes) address'],
    ['Solana with 0/O/I/l', '0OIl' + '1'.repeat(40), 'is not a valid EVM (0x + 40 hex) or Solana (base58, 32 bytes) address'],
    ['base58 that does not decode to 32 bytes', '1'.repeat(44), 'is not a valid EVM (0x + 40 hex) or Solana (base58, 32 bytes) address'],
  ])('answers invalid_identity for an address that is %s', async (_name, address, message) => {
    const res = await assess({ address });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'invalid_identity', message: ADDRESS, details: [{ field: 'address', message }] } });
  });

  it('answers invalid_identity for an operator_token that is not an opc_ credential', async () => {
    const res = await assess({ operator_token: 'as_live_nope' });
    expect(res.body).toEqual({
      error: { code: 'invalid_identity', message: TOKEN, details: [{ field: 'operator_token', message: 'must be an operator credential (opc_…)' }] },
    });
  });

  it('accepts a mixed-case EVM address with a wrong checksum (the checksum is optional)', async () => {
    const res = await assess({ address: '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01' });
    expect(res.status).toBe(200);
    expect(res.body.resolved_operator).toBe('0xabcdef0123456789abcdef0123456789abcdef01');
  });

  it.each([
    ['policy.min_age', { min_age: 19 }, 'must be 18 or 21'],
    ['policy.min_age', { min_age: '21' }, 'must be 18 or 21'],
    ['policy.require_kyc', { require_kyc: 'yes' }, 'must be true or false'],
    ['policy.require_sanctions_clear', { require_sanctions_clear: 1 }, 'must be true or false'],
    ['policy.blocked_jurisdictions[0]', { blocked_jurisdictions: ['us'] }, 'must be an uppercase ISO 3166-1 alpha-2 country code (e.g. US, DE)'],
    ['policy.allowed_jurisdictions[1]', { allowed_jurisdictions: ['US', 'USA'] }, 'must be an uppercase ISO 3166-1 alpha-2 country code (e.g. US, DE)'],
    ['policy.allowed_jurisdictions[0]', { allowed_jurisdictions: ['XX'] }, 'must be an uppercase ISO 3166-1 alpha-2 country code (e.g. US, DE)'],
    ['policy.blocked_jurisdictions', { blocked_jurisdictions: 'IR' }, 'must be an array of ISO 3166-1 alpha-2 country codes'],
    ['policy.blocked_jurisdictions', { blocked_jurisdictions: Array(10_000).fill('US') }, 'must list at most 300 countries (got 10000)'],
  ])('rejects a bad policy naming %s', async (field, policy, message) => {
    const res = await assess({ address: evmAddress(), policy });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'bad_request', message: `Invalid request: ${field}`, details: [{ field, message }] } });
  });

  it('rejects a policy that is not an object', async () => {
    const res = await assess({ address: evmAddress(), policy: ['require_kyc'] });
    expect(res.body).toEqual({
      error: { code: 'bad_request', message: 'Invalid request: policy', details: [{ field: 'policy', message: 'must be an object' }] },
    });
  });

  it.each([
    [{ requireKyc: true }, 'policy.requireKyc', 'policy.requireKyc is not allowed; did you mean require_kyc?'],
    [{ require_kyc: false, max_age: 99 }, 'policy.max_age', 'policy.max_age is not allowed; did you mean min_age?'],
    [
      { 'require-sanctions-clear': true },
      'policy.require-sanctions-clear',
      'policy.require-sanctions-clear is not allowed; did you mean require_sanctions_clear?',
    ],
    [{ blocked_jurisdiction: ['IR'] }, 'policy.blocked_jurisdiction', 'policy.blocked_jurisdiction is not allowed; did you mean blocked_jurisdictions?'],
    [
      { require_everything: true },
      'policy.require_everything',
      'policy.require_everything is not allowed; policy keys are require_kyc, require_sanctions_clear, min_age, blocked_jurisdictions, allowed_jurisdictions',
    ],
  ])('rejects the unknown policy key in %j naming it, never ignoring a misspelt rule', async (policy, field, message) => {
    const res = await assess({ address: evmAddress(), policy });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'bad_request', message: `Invalid request: ${field}`, details: [{ field, message }] } });
  });

  it.each([
    [{ test: 'true' }, 'test', 'must be true or false'],
    [{ refresh: 1 }, 'refresh', 'must be true or false'],
    [{ chain: 'bitcoin' }, 'chain', 'must be one of base, ethereum, arbitrum, optimism, polygon, tempo, solana'],
    [{ chain: 'solana' }, 'chain', 'solana does not apply to an EVM address'],
    [{ signer: 'x' }, 'signer', 'must be an object {address, network}'],
    [{ signer: { address: null, network: 'bitcoin' } }, 'signer.network', 'must be "evm" or "solana"'],
    [{ signer: { network: 'evm' } }, 'signer.address', 'is required (null when the payment carries no wallet signature)'],
    [{ resolve_signer: { address: 5, network: 'evm' } }, 'resolve_signer.address', 'must be a string or null'],
  ])('rejects %j naming the field', async (extra, field, message) => {
    const res = await assess({ address: evmAddress(), ...extra });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 'bad_request', message: `Invalid request: ${field}`, details: [{ field, message }] } });
  });

  it('answers invalid_address for a signer address that does not match its network', async () => {
    const res = await assess({ address: evmAddress(), signer: { address: evmAddress(), network: 'solana' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'invalid_address',
        message: 'Invalid wallet address.',
        details: [{ field: 'signer.address', message: 'is not a valid Solana (base58, 32 bytes) address' }],
      },
    });
  });

  it('names every bad field at once', async () => {
    const res = await assess({ address: evmAddress(), chain: 7, policy: { min_age: 30, allowed_jurisdictions: ['de'] } });
    expect(res.body.error.details).toEqual([
      { field: 'chain', message: 'must be one of base, ethereum, arbitrum, optimism, polygon, tempo, solana' },
      { field: 'policy.min_age', message: 'must be 18 or 21' },
      { field: 'policy.allowed_jurisdictions[0]', message: 'must be an uppercase ISO 3166-1 alpha-2 country code (e.g. US, DE)' },
    ]);
  });

  it('rejects a body that is not a JSON object', async () => {
    const res = await request(h.app).post('/v1/assess').set('X-API-Key', key).set('Content-Type', 'application/json').send('[1,2]');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { code: 'bad_request', message: 'Invalid request: body', details: [{ field: 'body', message: 'must be a JSON object' }] },
    });
  });

  it('answers 413 for a 2 MB body', async () => {
    const res = await assess({ address: evmAddress(), padding: 'x'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      error: { code: 'payload_too_large', message: 'Request body is too large.', details: [{ field: 'body', message: 'exceeds the size limit' }] },
    });
  });
});
