// POST /v1/assess (API key, rate limit + monthly quota; test mode skips both and never touches the
// database) and GET /v1/assess/verify/:ticket (the verify_url of a denial: starts a session, redirects).
import { Router, type Request, type RequestHandler } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import Joi from 'joi';
import { LRUCache } from 'lru-cache';
import { counter } from '../http/metrics';
import { parseAddress, parseAddressFor, EVM_ZERO_ADDRESS } from '../../shared/address';
import { CHAINS, type Chain } from '../../shared/chains';
import { parsePolicy, type ParsedPolicy } from '../../shared/policy';
import type { AddressFamily } from '../../shared/types';
import type { Deps } from '../deps';
import { route } from '../http/asyncRoute';
import { requireApiKey } from '../http/auth';
import { fail, failAll, validator } from '../http/validate';
import type { AssessInput } from '../services/assess';
import { CredentialsService } from '../services/credentials';
import { parseWalletProof, type WalletProofInput } from '../services/walletProof';

export interface ParsedAssessRequest extends AssessInput {
  test: boolean;
}

/** Shown when no identity was sent at all (or both were malformed): the caller may not know either field. */
export const IDENTITY_MESSAGE =
  'Provide a wallet address (EVM 0x + 40 hex, or Solana base58) in "address", or an operator credential (opc_…) in "operator_token".';
/**
 * Shown when a credential or a wallet was sent but is malformed. Agents present these to merchants in the
 * X-Operator-Token and X-Wallet-Address headers, which a gate forwards here: the message names both spellings
 * of the one thing the caller sent, so an agent recognises it.
 */
export const TOKEN_MESSAGE =
  'The operator credential (X-Operator-Token header, or "operator_token" in an assess request) is malformed: an operator credential starts with opc_.';
export const ADDRESS_MESSAGE =
  'The wallet address (X-Wallet-Address header, or "address" in an assess request) is malformed: expected EVM (0x + 40 hex) or Solana (base58).';

type Signer = AssessInput['signer'];
type Identity = AssessInput['identity'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const booleanField = Joi.boolean().messages({ 'boolean.base': 'must be true or false' });

/** `signer` (or its older name `resolve_signer`): who signed the payment; address null when the rail carries none. */
function signerRule(field: 'signer' | 'resolve_signer') {
  return (raw: unknown, helpers: Joi.CustomHelpers): Signer | Joi.ErrorReport => {
    if (raw === null) return null;
    if (!isObject(raw)) return fail(helpers, 'bad_request', 'must be an object {address, network}', { field });
    const network = raw.network;
    if (network !== 'evm' && network !== 'solana') return fail(helpers, 'bad_request', 'must be "evm" or "solana"', { field: `${field}.network` });
    if (raw.address === null) return { network, address: null };
    if (raw.address === undefined)
      return fail(helpers, 'bad_request', 'is required (null when the payment carries no wallet signature)', { field: `${field}.address` });
    if (typeof raw.address !== 'string') return fail(helpers, 'bad_request', 'must be a string or null', { field: `${field}.address` });
    const parsed = parseAddressFor(network, raw.address);
    const summary = 'Invalid wallet address.';
    if (!parsed) {
      const expected = network === 'evm' ? 'EVM (0x + 40 hex)' : 'Solana (base58, 32 bytes)';
      return fail(helpers, 'invalid_address', `is not a valid ${expected} address`, { field: `${field}.address`, summary });
    }
    if (parsed.address === EVM_ZERO_ADDRESS)
      return fail(helpers, 'invalid_address', 'the zero address cannot sign a payment', { field: `${field}.address`, summary });
    return { network, address: parsed.address };
  };
}

/**
 * Parsed policies by their JSON text: a merchant sends the same few policies on every call, and serialising one
 * costs a fraction of validating it. Results are shared between requests, so nothing downstream mutates them.
 */
const parsedPolicies = new LRUCache<string, Readonly<ParsedPolicy>>({ max: 1000 });

export function parsePolicyOnce(raw: unknown): Readonly<ParsedPolicy> {
  // A body parsed from JSON serialises back to the same value, so equal text means an equal policy.
  const key = JSON.stringify(raw);
  if (key === undefined || key.length > 4096) return parsePolicy(raw);
  let parsed = parsedPolicies.get(key);
  if (!parsed) parsedPolicies.set(key, (parsed = parsePolicy(raw)));
  return parsed;
}

/** The policy object, parsed by the parser the gate shares: problems (unknown keys among them) name `policy.<key>`. */
function policyRule(raw: unknown, helpers: Joi.CustomHelpers): ParsedPolicy | Joi.ErrorReport[] {
  const parsed = parsePolicyOnce(raw);
  if (!parsed.problems.length) return parsed;
  return failAll(
    helpers,
    parsed.problems.map((p) => fail(helpers, 'bad_request', p.message, { field: p.field })),
  );
}

/**
 * `wallet_proof`: a Sign-In-With-X proof of control of `address`. Its structure (base64 JSON, each field) is
 * checked here, every problem a 400 naming the field; whether it is valid is the service's verdict.
 */
function walletProofRule(raw: unknown, helpers: Joi.CustomHelpers): WalletProofInput | null | Joi.ErrorReport | Joi.ErrorReport[] {
  if (raw === null) return null;
  const parent = (helpers.state.ancestors as unknown[])[0] as Record<string, unknown> | undefined;
  if (parent?.test === true)
    return fail(helpers, 'bad_request', 'is not available in test mode (the reserved test addresses cannot sign)', { field: 'wallet_proof' });
  const problems: Array<{ field: string; message: string }> = [];
  const proof = parseWalletProof(raw, problems);
  if (problems.length)
    return failAll(
      helpers,
      problems.map((p) => fail(helpers, 'bad_request', p.message, { field: p.field })),
    );
  return proof;
}

/** The body once every key has passed its own rule (policy and signers already parsed). */
interface AssessKeys {
  test?: boolean;
  refresh?: boolean;
  chain?: Chain | null;
  policy?: ParsedPolicy;
  signer?: Signer;
  resolve_signer?: Signer;
  operator_token?: unknown;
  address?: unknown;
  wallet_proof?: WalletProofInput | null;
}

/**
 * Identity, once every other field has the right shape: an operator credential wins over an address when both
 * are sent (the address is then ignored with a warning); a malformed credential beside a valid address falls
 * back to the address. In test mode a malformed address is `invalid_address` (test addresses are reserved ones).
 */
function assessRule(body: AssessKeys, helpers: Joi.CustomHelpers): ParsedAssessRequest | Joi.ErrorReport | Joi.ErrorReport[] {
  const test = body.test === true;
  const policy = body.policy ?? parsePolicy(undefined);
  const warnings = [...policy.warnings];
  const { operator_token: token, address } = body;
  let identity: Identity | null = null;
  let problems: Joi.ErrorReport[] = [];
  if (token !== undefined && token !== null) {
    if (typeof token !== 'string') problems.push(fail(helpers, 'invalid_identity', 'must be a string', { field: 'operator_token', summary: TOKEN_MESSAGE }));
    else if (!CredentialsService.isCredentialShaped(token)) {
      problems.push(fail(helpers, 'invalid_identity', 'must be an operator credential (opc_…)', { field: 'operator_token', summary: TOKEN_MESSAGE }));
    } else identity = { kind: 'token', token };
    if (identity && address !== undefined && address !== null) warnings.push({ field: 'address', message: 'ignored: operator_token identifies the operator' });
  }
  if (!identity && address !== undefined && address !== null) {
    const parsed = parseAddress(address);
    if (parsed) {
      identity = { kind: 'wallet', wallet: parsed };
      problems = [];
    } else if (typeof address !== 'string') {
      problems.push(fail(helpers, 'invalid_identity', 'must be a string', { field: 'address', summary: ADDRESS_MESSAGE }));
    } else if (test) {
      return fail(helpers, 'invalid_address', 'is not a valid EVM or Solana address', { field: 'address', summary: 'Invalid wallet address.' });
    } else {
      problems.push(
        fail(helpers, 'invalid_identity', 'is not a valid EVM (0x + 40 hex) or Solana (base58, 32 bytes) address', {
          field: 'address',
          summary: ADDRESS_MESSAGE,
        }),
      );
    }
  }
  if (!identity) {
    if (!problems.length) return fail(helpers, 'invalid_identity', 'address or operator_token is required', { field: 'address', summary: IDENTITY_MESSAGE });
    if (problems.length === 1) return problems[0];
    // Both were sent and both are malformed: one message covering both.
    for (const p of problems) (p.local as { summary?: string }).summary = IDENTITY_MESSAGE;
    return failAll(helpers, problems);
  }
  const chain = body.chain ?? null;
  if (identity.kind === 'wallet' && chain) {
    const wanted: AddressFamily = chain === 'solana' ? 'solana' : 'evm';
    if (identity.wallet.network !== wanted) {
      return fail(helpers, 'bad_request', `${chain} does not apply to ${identity.wallet.network === 'evm' ? 'an EVM' : 'a Solana'} address`, {
        field: 'chain',
      });
    }
  }
  const signer = body.signer !== undefined ? body.signer : (body.resolve_signer ?? null);
  const walletProof = body.wallet_proof ?? null;
  if (walletProof && identity.kind === 'token') warnings.push({ field: 'wallet_proof', message: 'ignored: operator_token identifies the operator' });
  return {
    identity,
    chain,
    refresh: body.refresh === true,
    policy: policy.policy,
    signer,
    walletProof: identity.kind === 'wallet' ? walletProof : null,
    warnings,
    test,
  };
}

/**
 * The assess request body. A field of the wrong shape is `bad_request`; a malformed signer wallet
 * `invalid_address`; no usable identity `invalid_identity`. Fields checked by a rule (`x-doc`) are documented
 * by the schema of the same name in the API description.
 */
export const assessSchema = Joi.object<AssessKeys>({
  test: booleanField.description('Test mode: reserved fixture addresses; not billed or rate limited; nothing stored.'),
  refresh: booleanField.description('Wallet mode: queue the wallet for re-scoring now (the answer itself does not wait for it).'),
  chain: Joi.any()
    .valid(...CHAINS, null)
    .messages({ 'any.only': `must be one of ${CHAINS.join(', ')}` })
    .description('Restricts the assessment to one chain; must match the address family.'),
  policy: Joi.any().custom(policyRule).meta({ 'x-doc': 'Policy' }).description('Rules the decision applies; absent or null: no policy.'),
  signer: Joi.any().custom(signerRule('signer')).meta({ 'x-doc': 'Signer' }).description('The wallet that signed the payment, compared with the identity.'),
  resolve_signer: Joi.when('signer', { is: Joi.exist(), then: Joi.any(), otherwise: Joi.any().custom(signerRule('resolve_signer')) })
    .meta({ 'x-doc': 'Signer', deprecated: true })
    .description('Older name of signer; ignored when signer is sent.'),
  operator_token: Joi.any().meta({ 'x-doc': 'OperatorToken' }).description('An operator credential (opc_…); wins over address.'),
  address: Joi.any()
    .meta({ 'x-doc': 'WalletAddress' })
    .description('The wallet to assess: EVM (0x + 40 hex, any case) or Solana (base58). Ignored when operator_token is sent.'),
  wallet_proof: Joi.any()
    .custom(walletProofRule)
    .meta({ 'x-doc': 'WalletProof' })
    .description('Wallet mode: a Sign-In-With-X proof of control of address ({type: "siwx", header, domain, uri}); answered by the wallet_proof verdict.'),
}).custom(assessRule);

/** Validates an assess body into AssessInput; every problem is a 400 naming the field. Compiled once. */
export const parseAssessRequest = validator<ParsedAssessRequest>(assessSchema, { precedence: ['bad_request', 'invalid_address', 'invalid_identity'] });

/** `jsonBody`: the app's JSON body parser and input guard, run on POST /v1/assess only. */
export function assessRouter(deps: Deps, jsonBody: RequestHandler[]): Router {
  const router = Router();
  const assess = deps.services.assess;
  const decisions = counter(deps.metrics, {
    name: 'kya_assess_decisions_total',
    help: 'Assess decisions by outcome and identity method',
    labelNames: ['decision', 'identity_method', 'test'],
  });
  // Each opened link creates a session row: bound how many one client can create.
  const linkLimiter = deps.limiters.create({
    name: 'assess-verify-link',
    windowMs: 60_000,
    limit: () => 10,
    key: (req) => ipKeyGenerator(req.ip ?? '0.0.0.0'),
  });

  router.post(
    '/v1/assess',
    ...jsonBody,
    requireApiKey(deps.services.accounts, deps.config.signupUrl, 'assess'),
    // Test mode is neither rate limited nor billed (and so never touches Redis).
    deps.meter.metered({ skip: (req: Request) => (req.body as { test?: unknown } | undefined)?.test === true }),
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
