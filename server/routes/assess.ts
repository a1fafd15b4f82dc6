// POST /v1/assess (API key, rate limit + monthly quota; test mode skips both and never touches the
// database) and GET /v1/assess/verify/:ticket (the verify_url of a denial: starts a session, redirects).
import { Router, type Request } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { Counter } from 'prom-client';
import { parseAddress, parseAddressFor, EVM_ZERO_ADDRESS } from '../../shared/address';
import { CHAINS, isChain } from '../../shared/chains';
import { ApiError, badRequest, type FieldProblem } from '../../shared/errors';
import { parsePolicy } from '../../shared/policy';
import type { AddressFamily } from '../../shared/types';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { requireApiKey } from '../http/auth';
import type { AssessInput } from '../services/assess';
import { CredentialsService } from '../services/credentials';

export interface ParsedAssessRequest extends AssessInput {
  test: boolean;
}

const IDENTITY_MESSAGE = 'Provide a wallet address (EVM 0x + 40 hex, or Solana base58) in "address", or an operator credential (opc_…) in "operator_token".';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseSigner(body: Record<string, unknown>, problems: FieldProblem[], addressProblems: FieldProblem[]): AssessInput['signer'] {
  const field = body.signer !== undefined ? 'signer' : body.resolve_signer !== undefined ? 'resolve_signer' : null;
  if (!field || body[field] === null) return null;
  const raw = body[field];
  if (!isObject(raw)) {
    problems.push({ field, message: 'must be an object {address, network}' });
    return null;
  }
  const network = raw.network;
  if (network !== 'evm' && network !== 'solana') {
    problems.push({ field: `${field}.network`, message: 'must be "evm" or "solana"' });
    return null;
  }
  if (raw.address === null) return { network, address: null };
  if (raw.address === undefined) {
    problems.push({ field: `${field}.address`, message: 'is required (null when the payment carries no wallet signature)' });
    return null;
  }
  if (typeof raw.address !== 'string') {
    problems.push({ field: `${field}.address`, message: 'must be a string or null' });
    return null;
  }
  const parsed = parseAddressFor(network, raw.address);
  if (!parsed) {
    addressProblems.push({ field: `${field}.address`, message: `is not a valid ${network === 'evm' ? 'EVM (0x + 40 hex)' : 'Solana (base58, 32 bytes)'} address` });
    return null;
  }
  if (parsed.address === EVM_ZERO_ADDRESS) {
    addressProblems.push({ field: `${field}.address`, message: 'the zero address cannot sign a payment' });
    return null;
  }
  return { network, address: parsed.address };
}

/** Validates an assess body into AssessInput; every problem is a 400 naming the field. */
export function parseAssessRequest(body: unknown): ParsedAssessRequest {
  if (!isObject(body)) throw badRequest([{ field: 'body', message: 'must be a JSON object' }]);
  const problems: FieldProblem[] = [];
  const addressProblems: FieldProblem[] = [];
  for (const key of ['test', 'refresh'] as const) {
    if (body[key] !== undefined && typeof body[key] !== 'boolean') problems.push({ field: key, message: 'must be true or false' });
  }
  const test = body.test === true;
  let chain: AssessInput['chain'] = null;
  if (body.chain !== undefined && body.chain !== null) {
    if (isChain(body.chain)) chain = body.chain;
    else problems.push({ field: 'chain', message: `must be one of ${CHAINS.join(', ')}` });
  }
  const policy = parsePolicy(body.policy);
  problems.push(...policy.problems);
  const signer = parseSigner(body, problems, addressProblems);

  // Identity: an operator credential wins over an address when both are sent.
  let identity: AssessInput['identity'] | null = null;
  const identityProblems: FieldProblem[] = [];
  const warnings = [...policy.warnings];
  const token = body.operator_token;
  const address = body.address;
  if (token !== undefined && token !== null) {
    if (typeof token !== 'string') identityProblems.push({ field: 'operator_token', message: 'must be a string' });
    else if (!CredentialsService.isCredentialShaped(token)) identityProblems.push({ field: 'operator_token', message: 'must be an operator credential (opc_…)' });
    else identity = { kind: 'token', token };
    if (identity && address !== undefined && address !== null) warnings.push({ field: 'address', message: 'ignored: operator_token identifies the operator' });
  }
  if (!identity && address !== undefined && address !== null) {
    if (typeof address !== 'string') identityProblems.push({ field: 'address', message: 'must be a string' });
    else {
      const parsed = parseAddress(address);
      if (parsed) {
        identity = { kind: 'wallet', wallet: parsed };
        identityProblems.length = 0;
      } else if (test) {
        throw new ApiError('invalid_address', 'Invalid wallet address.', { details: [{ field: 'address', message: 'is not a valid EVM or Solana address' }] });
      } else {
        identityProblems.push({ field: 'address', message: 'is not a valid EVM (0x + 40 hex) or Solana (base58, 32 bytes) address' });
      }
    }
  }
  if (problems.length) throw badRequest(problems);
  if (addressProblems.length) throw badRequest(addressProblems, 'invalid_address', 'Invalid wallet address.');
  if (!identity) {
    throw badRequest(identityProblems.length ? identityProblems : [{ field: 'address', message: 'address or operator_token is required' }], 'invalid_identity', IDENTITY_MESSAGE);
  }
  if (identity.kind === 'wallet' && chain) {
    const wanted: AddressFamily = chain === 'solana' ? 'solana' : 'evm';
    if (identity.wallet.network !== wanted) throw badRequest([{ field: 'chain', message: `${chain} does not apply to ${identity.wallet.network === 'evm' ? 'an EVM' : 'a Solana'} address` }]);
  }
  return {
    identity,
    chain,
    refresh: body.refresh === true,
    policy: policy.policy,
    signer,
    warnings,
    test,
  };
}

export function assessRouter(deps: Deps): Router {
  const router = Router();
  const assess = deps.services.assess;
  const decisions =
    (deps.metrics.getSingleMetric('kya_assess_decisions_total') as Counter<'decision' | 'identity_method' | 'test'> | undefined) ??
    new Counter({
      name: 'kya_assess_decisions_total',
      help: 'Assess decisions by outcome and identity method',
      labelNames: ['decision', 'identity_method', 'test'],
      registers: [deps.metrics],
    });
  // Each opened link creates a session row: bound how many one client can create.
  const linkLimiter = deps.limiters.create({ name: 'assess-verify-link', windowMs: 60_000, limit: () => 10, key: (req) => ipKeyGenerator(req.ip ?? '0.0.0.0') });

  router.post(
    '/v1/assess',
    requireApiKey(deps.services.accounts, deps.config.signupUrl, 'assess'),
    // Test mode is neither rate limited nor billed (and so never touches Redis).
    deps.meter.metered({ skip: (req: Request) => req.body?.test === true }),
    route(async (req, res) => {
      const input = parseAssessRequest(req.body);
      const body = input.test ? assess.assessTest(input, req.principal!) : await assess.assess(input, req.principal!, String(req.id));
      decisions.inc({ decision: body.decision, identity_method: body.identity_method, test: String(input.test) });
      res.json(body);
    }),
  );

  router.get(
    '/v1/assess/verify/:ticket',
    linkLimiter,
    route(async (req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(303, await assess.openVerifyLink(String(req.params.ticket)));
    }),
  );
  return router;
}
