// The typed API client (@kya/gate/client): one error class per error code the API returns, with the whole body,
// quota, retryAfter, the token_expired session and parsed agent_instructions; and every endpoint method
// against a live identity server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ERROR_STATUS, type ErrorCode } from '../../shared/errors';
import { resetTables } from '../support/harness';
import { ASSESS_TABLES, createOperator, evmAddress, mintCredential } from '../assess/seed';
import {
  AccountCancelledError,
  ApiError,
  BadRequestError,
  InvalidCredentialError,
  KyaClient,
  KycRequiredError,
  NetworkError,
  NotFoundError,
  PaymentRequiredError,
  QuotaExceededError,
  RateLimitedError,
  SignupRequiredError,
  TokenExpiredError,
} from '@kya/gate/client';
import { freePort } from '../support/net';
import { startIdentityServer, type IdentityServer } from './support';

const EXPECTED: Record<ErrorCode, new (...args: any[]) => ApiError> = {
  bad_request: BadRequestError,
  invalid_address: BadRequestError,
  invalid_identity: BadRequestError,
  invalid_test_address: BadRequestError,
  invalid_network: BadRequestError,
  invalid_wallet: BadRequestError,
  signup_required: SignupRequiredError,
  unauthorized: ApiError,
  invalid_credential: InvalidCredentialError,
  token_expired: TokenExpiredError,
  payment_required: PaymentRequiredError,
  account_cancelled: AccountCancelledError,
  forbidden: ApiError,
  not_found: NotFoundError,
  unknown_address: NotFoundError,
  conflict: ApiError,
  kyc_required: KycRequiredError,
  payload_too_large: ApiError,
  rate_limited: RateLimitedError,
  quota_exceeded: QuotaExceededError,
  internal_error: ApiError,
  api_error: ApiError,
};

describe('KyaClient typed errors', () => {
  let server: http.Server;
  let next: { status: number; body: unknown; headers?: Record<string, string> } = { status: 200, body: {} };
  let client: KyaClient;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        res.end(JSON.stringify(next.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new KyaClient({ apiKey: 'as_live_test', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 500 });
  });
  afterAll(async () => {
    client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it.each(Object.keys(ERROR_STATUS) as ErrorCode[])('maps %s to its own error class with the whole body', async (code) => {
    const body = { error: { code, message: `about ${code}` } };
    next = { status: ERROR_STATUS[code], body, headers: code === 'rate_limited' ? { 'retry-after': '7' } : {} };
    // Reads go through credentials.list (GET): the class depends on the answer, never on the endpoint.
    const err = await client.credentials.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EXPECTED[code]);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: ERROR_STATUS[code], code, message: `about ${code}`, body });
  });

  it('gives RateLimited its retryAfter and QuotaExceeded the quota headers', async () => {
    next = { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '3' } };
    // A retry-after (3 s) above the timeout (0.5 s) is not waited for: the error surfaces at once.
    expect(await client.sessions.create().catch((e: unknown) => e)).toMatchObject({ name: 'RateLimitedError', retryAfter: 3 });
    next = {
      status: 429,
      body: { error: { code: 'quota_exceeded', message: 'cap' } },
      headers: { 'x-quota-limit': '100', 'x-quota-used': '100', 'x-quota-reset': '2026-12-01' },
    };
    expect(await client.assess({ address: evmAddress() }).catch((e: unknown) => e)).toMatchObject({
      name: 'QuotaExceededError',
      quota: { limit: 100, used: 100, reset: '2026-12-01' },
    });
  });

  it('carries the new session on TokenExpired and parsed agent_instructions on ApiError', async () => {
    const session = { session_id: 's1', poll_secret: 'p1', verify_url: 'https://id.test/verify/s1', poll_url: 'https://id.test/v1/sessions/s1' };
    next = { status: 401, body: { error: { code: 'token_expired', message: 'expired' }, ...session } };
    const expired = (await client.assess({ operator_token: 'opc_x' }).catch((e: unknown) => e)) as TokenExpiredError;
    expect(expired.session).toEqual(session);
    const instructions = { action: 'contact_merchant', steps: ['Do not retry.'], user_message: 'Contact the merchant.' };
    next = { status: 503, body: { error: { code: 'api_error', message: 'down' }, agent_instructions: JSON.stringify(instructions) } };
    expect(await client.assess({ address: evmAddress() }).catch((e: unknown) => e)).toMatchObject({
      name: 'ApiError',
      code: 'api_error',
      agentInstructions: instructions,
    });
  });

  it('reports an unreachable server as a NetworkError', async () => {
    const dead = new KyaClient({ apiKey: 'as_live_test', baseUrl: `http://127.0.0.1:${await freePort()}` });
    expect(await dead.reputation(evmAddress()).catch((e: unknown) => e)).toEqual(expect.objectContaining({ name: 'NetworkError', reason: 'unreachable' }));
    expect(await dead.reputation(evmAddress()).catch((e: unknown) => e)).toBeInstanceOf(NetworkError);
    dead.close();
  });
});

describe('KyaClient against a live identity server', () => {
  let id: IdentityServer;
  let client: KyaClient;
  beforeAll(async () => {
    id = await startIdentityServer({ tier: 'paid', quota: 1000 });
    await resetTables(
      id.h.deps,
      ASSESS_TABLES.filter((t) => t !== 'accounts'),
    );
    client = new KyaClient({ apiKey: id.apiKey, baseUrl: id.baseUrl });
  });
  afterAll(async () => {
    client.close();
    await id.close();
  });

  it('assesses and reads the quota headers', async () => {
    const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
    const { data, quota } = await client.assess({ operator_token: token, policy: { require_kyc: true } });
    expect(data).toMatchObject({ decision: 'allow', identity_method: 'operator_token' });
    expect(quota).toEqual({ limit: 1000, used: expect.any(Number), reset: expect.any(String) });
  });

  it('creates a session and polls it with its secret', async () => {
    const session = await client.sessions.create({ context: 'client-test', productName: 'Thing' });
    expect(session).toMatchObject({ session_id: expect.any(String), poll_secret: expect.any(String), verify_url: expect.any(String) });
    expect(await client.sessions.poll(session.session_id, session.poll_secret)).toMatchObject({ session_id: session.session_id, status: 'pending' });
  });

  it('raises TokenExpired with the auto-minted session for a revoked credential', async () => {
    const { token, id: credentialId } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
    await id.h.deps.db('credentials').where({ id: credentialId }).update({ revoked_at: new Date() });
    const err = (await client.assess({ operator_token: token }).catch((e: unknown) => e)) as TokenExpiredError;
    expect(err).toBeInstanceOf(TokenExpiredError);
    expect(err.session).toMatchObject({ session_id: expect.any(String), poll_secret: expect.any(String), verify_url: expect.any(String) });
  });

  it('lists credentials, refuses creation before identity verification, and revokes', async () => {
    expect(await client.credentials.list()).toEqual({ account_verification: { kyc_status: 'none' }, credentials: [] });
    const refused = await client.credentials.create({ label: 'x' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(KycRequiredError);
    expect((refused as KycRequiredError).body).toMatchObject({ error: { code: 'kyc_required' }, verify_url: expect.any(String) });
    // A credential of the merchant's own account, revoked by its opc_ value.
    const own = await mintCredential(id.h.deps, id.merchantId);
    expect(await client.credentials.revoke(own.token)).toEqual({ id: own.id, revoked: true });
  });

  it('captures a wallet, and raises InvalidCredential for a credential that never existed', async () => {
    const { token } = await mintCredential(id.h.deps, await createOperator(id.h.deps));
    const wallet = evmAddress();
    expect(await client.wallets.capture({ operatorToken: token, walletAddress: wallet, network: 'evm', idempotencyKey: 'k1' })).toEqual({
      associated: true,
      first_seen: true,
    });
    const err = await client.wallets.capture({ operatorToken: 'opc_' + 'Q'.repeat(43), walletAddress: wallet, network: 'evm' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidCredentialError);
  });

  it('reads reputation: an address not indexed yet is a NotFound with can_assess', async () => {
    const err = await client.reputation(evmAddress()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).body?.error).toMatchObject({ code: 'unknown_address', can_assess: true });
  });

  it('raises SignupRequired for a wrong API key', async () => {
    const wrong = new KyaClient({ apiKey: 'as_live_' + 'W'.repeat(43), baseUrl: id.baseUrl });
    expect(await wrong.credentials.list().catch((e: unknown) => e)).toBeInstanceOf(SignupRequiredError);
    wrong.close();
  });
});
