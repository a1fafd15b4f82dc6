// The OpenAPI 3.1 description of the public API, served at /openapi.json. Request bodies and parameters are
// converted from the joi schemas the routes validate with; response shapes come from ./schemas, which the
// drift test holds every response of the suite to. Built once per process.
import Joi from 'joi';
import parse from 'joi-to-json';
import { policySchema } from '../../shared/policy';
import { ERROR_STATUS, type ErrorCode } from '../../shared/errors';
import { assessSchema } from '../routes/assess';
import { createCredentialSchema } from '../routes/credentials';
import { reputationParamsSchema, reputationQuerySchema } from '../routes/reputation';
import { CLIENT_ID_RE, createSessionSchema, refreshSchema } from '../routes/sessions';
import { POLL_SECRET_HEADER } from '../services/sessions';
import { captureSchema } from '../routes/wallets';
import { SIWX_MAX_HEADER_LENGTH } from '../../shared/siwx';
import { componentSchemas, errorBody, obj, ref, str, type Schema } from './schemas';

/**
 * Schemas of fields a route checks with a custom rule (an identity that may be either of two things, a policy
 * parsed by the parser the gate shares): the route's joi key carries `x-doc: <name>` and the description
 * shows this schema in its place.
 */
const DOCUMENTED_FIELDS: Record<string, Joi.Schema> = {
  Policy: policySchema.description('Every rule is optional; unknown keys are ignored and listed in warnings.'),
  Signer: Joi.object({
    network: Joi.string().valid('evm', 'solana').required(),
    address: Joi.string().allow(null).required().description('The signing wallet; null when the payment rail carries no wallet signature.'),
  }),
  OperatorToken: Joi.string().pattern(/^opc_/).min(20).max(128).allow(null),
  WalletAddress: Joi.string().allow(null).description('EVM: 0x + 40 hex digits in any case (checksum optional). Solana: base58 decoding to 32 bytes.'),
  Network: Joi.string().valid('evm', 'solana'),
  WalletProof: Joi.object({
    type: Joi.string().valid('siwx').required(),
    header: Joi.string().max(SIWX_MAX_HEADER_LENGTH).required().description("The agent's SIGN-IN-WITH-X header value, verbatim (base64-encoded JSON)."),
    domain: Joi.string().required().description("The host the proof must be signed for: the merchant's public host, never a request's Host header."),
    uri: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required()
      .description("The merchant's public origin; the proof's uri must be on the same scheme, host and port."),
  }).description('A proof of control of the address wallet (Sign-In-With-X, CAIP-122), checked by the server.'),
};

function toJsonSchema(schema: Joi.Schema): Schema {
  return replaceDocumented(parse(schema, 'open-api-3.1') as Schema);
}

function replaceDocumented(node: unknown): Schema {
  if (Array.isArray(node)) return node.map(replaceDocumented) as unknown as Schema;
  if (!node || typeof node !== 'object') return node as Schema;
  const out: Schema = {};
  const source = node as Schema;
  const doc = source['x-doc'];
  if (typeof doc === 'string') {
    const { description, deprecated } = source;
    return { $ref: `#/components/schemas/${doc}`, ...(description ? { description } : {}), ...(deprecated ? { deprecated } : {}) };
  }
  for (const [k, v] of Object.entries(source)) {
    // Validation allows unknown keys (they are ignored), so no request object is closed.
    if (k === 'additionalProperties' && v === false) continue;
    out[k] = replaceDocumented(v);
  }
  return out;
}

/** Query or path parameters from an object schema. */
function parameters(schema: Joi.Schema, where: 'query' | 'path'): Schema[] {
  const json = toJsonSchema(schema);
  const props = (json.properties ?? {}) as Record<string, Schema>;
  const required = new Set((json.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    return { name, in: where, required: where === 'path' || required.has(name), ...(description ? { description } : {}), schema: rest };
  });
}

const header = (description: string, schema: Schema = str()) => ({ description, schema });
const HEADERS: Record<string, Schema> = {
  'X-RateLimit-Limit': header('Requests per second allowed, or `unlimited` (then the other rate headers are absent).'),
  'X-RateLimit-Remaining': header('Requests left in the current one-second window.', { type: 'integer' }),
  'X-RateLimit-Reset': header('Seconds until the window resets.', { type: 'integer' }),
  'X-Quota-Limit': header('Monthly quota of the account (absent for unlimited accounts).', { type: 'integer' }),
  'X-Quota-Used': header('Metered calls used this month.', { type: 'integer' }),
  'X-Quota-Reset': header('The date the quota resets.'),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer' }),
};
const h = (name: string) => ({ $ref: `#/components/headers/${name}` });
const RATE_HEADERS = {
  'X-RateLimit-Limit': h('X-RateLimit-Limit'),
  'X-RateLimit-Remaining': h('X-RateLimit-Remaining'),
  'X-RateLimit-Reset': h('X-RateLimit-Reset'),
};
const QUOTA_HEADERS = { 'X-Quota-Limit': h('X-Quota-Limit'), 'X-Quota-Used': h('X-Quota-Used'), 'X-Quota-Reset': h('X-Quota-Reset') };

/** none; a per-client-IP limit; the account's per-second limit; that plus the monthly quota. */
type Metering = 'none' | 'ip' | 'rate' | 'quota';

interface Operation {
  summary: string;
  description?: string;
  tag: string;
  /** API key (X-API-Key or Bearer), or none. */
  auth: boolean;
  metering: Metering;
  body?: { schema: Joi.Schema; required: boolean };
  path?: Joi.Schema;
  query?: Joi.Schema;
  headers?: Schema[];
  /** The success status and its body (a component name), or a redirect. */
  ok: { status: number; schema?: string; description: string; headers?: Record<string, unknown> };
  /** Error codes beyond the ones authentication, metering and JSON bodies bring. */
  errors: ErrorCode[];
}

/** Limits run before the handler, so their headers are on every response that got that far (errors too). */
function meteringHeaders(op: Operation): Record<string, unknown> {
  return { ...(op.metering !== 'none' ? RATE_HEADERS : {}), ...(op.metering === 'quota' ? QUOTA_HEADERS : {}) };
}

function errorResponses(op: Operation): Record<string, unknown> {
  const codes = new Set<ErrorCode>(op.errors);
  if (op.body) ['bad_request', 'payload_too_large'].forEach((c) => codes.add(c as ErrorCode));
  // The input guard refuses a malformed or NUL-carrying path or query on every route before its handler.
  if (op.path || op.query) codes.add('bad_request');
  if (op.auth) ['signup_required', 'payment_required', 'account_cancelled'].forEach((c) => codes.add(c as ErrorCode));
  if (op.metering !== 'none') codes.add('rate_limited');
  if (op.metering === 'quota') codes.add('quota_exceeded');
  codes.add('internal_error');
  codes.add('api_error');
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers: Record<string, unknown> = { ...meteringHeaders(op) };
    if (status === 429 || status === 503) headers['Retry-After'] = h('Retry-After');
    out[String(status)] = {
      description: list.join(', '),
      ...(Object.keys(headers).length ? { headers } : {}),
      content: { 'application/json': { schema: errorBody(list) } },
    };
  }
  return out;
}

function operation(op: Operation, id: string): Schema {
  const parametersList = [...(op.path ? parameters(op.path, 'path') : []), ...(op.query ? parameters(op.query, 'query') : []), ...(op.headers ?? [])];
  const okHeaders = { ...meteringHeaders(op), ...op.ok.headers };
  return {
    operationId: id,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    security: op.auth ? [{ ApiKey: [] }, { Bearer: [] }] : [],
    ...(parametersList.length ? { parameters: parametersList } : {}),
    ...(op.body ? { requestBody: { required: op.body.required, content: { 'application/json': { schema: toJsonSchema(op.body.schema) } } } } : {}),
    responses: {
      [String(op.ok.status)]: {
        description: op.ok.description,
        ...(Object.keys(okHeaders).length ? { headers: okHeaders } : {}),
        ...(op.ok.schema ? { content: { 'application/json': { schema: ref(op.ok.schema) } } } : {}),
      },
      ...errorResponses(op),
    },
  };
}

const pollSecret = {
  name: POLL_SECRET_HEADER,
  in: 'header',
  required: true,
  description: 'The poll_secret returned when the session was created.',
  schema: str(),
};
const clientId = {
  name: 'X-Client-Id',
  in: 'header',
  required: false,
  description: 'Optional agent identifier (1 to 100 of letters, digits and . _ : @ -), recorded with the session.',
  schema: str({ pattern: CLIENT_ID_RE.source }),
};
const idParam = (name: string, description: string) => Joi.object({ [name]: Joi.string().required().description(description) });

const OPERATIONS: Record<string, Record<string, [string, Operation]>> = {
  '/v1/assess': {
    post: [
      'assess',
      {
        tag: 'Assess',
        summary: 'Decide whether to serve an agent',
        description:
          'Resolves the operator behind a wallet address or an operator credential, applies the policy and answers allow or deny with reasons. Test mode (`test: true`) answers from reserved fixture addresses and is neither billed nor rate limited.',
        auth: true,
        metering: 'quota',
        body: { schema: assessSchema, required: true },
        ok: { status: 200, schema: 'AssessResponse', description: 'The decision.' },
        errors: ['invalid_identity', 'invalid_address', 'invalid_test_address', 'invalid_credential', 'token_expired'],
      },
    ],
  },
  '/v1/assess/verify/{ticket}': {
    get: [
      'openVerifyLink',
      {
        tag: 'Assess',
        summary: 'Open the verify_url of a denial',
        description: 'Starts a verification session for the person and redirects to its page.',
        auth: false,
        metering: 'ip',
        path: idParam('ticket', 'From the verify_url of an assess denial.'),
        ok: { status: 303, description: 'Redirect to the verification page.', headers: { Location: header('The verification page.') } },
        errors: ['not_found', 'rate_limited'],
      },
    ],
  },
  '/v1/sessions': {
    post: [
      'createSession',
      {
        tag: 'Sessions',
        summary: 'Start a verification session (merchant)',
        auth: true,
        metering: 'quota',
        body: { schema: createSessionSchema, required: false },
        ok: { status: 200, schema: 'CreatedSession', description: 'The session: send the person verify_url and poll poll_url with X-Poll-Secret.' },
        errors: [],
      },
    ],
  },
  '/v1/sessions/public': {
    post: [
      'createPublicSession',
      {
        tag: 'Sessions',
        summary: 'Start a verification session (agent, no API key)',
        description: 'For agents that have no merchant: strictly limited per client IP.',
        auth: false,
        metering: 'ip',
        headers: [clientId],
        body: { schema: createSessionSchema, required: false },
        ok: { status: 200, schema: 'CreatedSession', description: 'The session.' },
        errors: ['rate_limited'],
      },
    ],
  },
  '/v1/sessions/refresh': {
    post: [
      'refreshCredential',
      {
        tag: 'Sessions',
        summary: 'Exchange a refresh token for a new operator credential',
        description: 'Refresh tokens rotate: each answer carries the next one, and a used one is refused.',
        auth: false,
        metering: 'ip',
        body: { schema: refreshSchema, required: true },
        ok: { status: 200, schema: 'RefreshResponse', description: 'A new credential and the next refresh token.' },
        errors: ['invalid_credential', 'rate_limited'],
      },
    ],
  },
  '/v1/sessions/{id}': {
    get: [
      'pollSession',
      {
        tag: 'Sessions',
        summary: 'Poll a verification session',
        description: 'Authenticated by X-Poll-Secret only (an X-API-Key is accepted and ignored). Poll every `poll_interval_seconds`.',
        auth: false,
        metering: 'ip',
        path: idParam('id', 'The session_id.'),
        headers: [pollSecret],
        ok: { status: 200, schema: 'SessionPoll', description: 'The session status; `verified` carries the operator credential once.' },
        errors: ['unauthorized', 'not_found', 'rate_limited'],
      },
    ],
  },
  '/v1/credentials': {
    post: [
      'createCredential',
      {
        tag: 'Credentials',
        summary: 'Mint an operator credential for the calling account',
        auth: true,
        metering: 'rate',
        body: { schema: createCredentialSchema, required: false },
        ok: { status: 200, schema: 'CreatedCredential', description: 'The credential; its value is shown only once.' },
        errors: ['kyc_required', 'forbidden'],
      },
    ],
    get: [
      'listCredentials',
      {
        tag: 'Credentials',
        summary: 'List the account verification and its credentials',
        auth: true,
        metering: 'rate',
        ok: { status: 200, schema: 'CredentialList', description: 'Active credentials, and expired ones that can still be refreshed.' },
        errors: [],
      },
    ],
  },
  '/v1/credentials/{id}': {
    delete: [
      'revokeCredential',
      {
        tag: 'Credentials',
        summary: 'Revoke a credential',
        auth: true,
        metering: 'rate',
        path: idParam('id', 'The credential id, or the opc_… value itself.'),
        ok: { status: 200, schema: 'RevokedCredential', description: 'Revoked.' },
        errors: ['not_found'],
      },
    ],
  },
  '/v1/credentials/wallets': {
    post: [
      'captureWallet',
      {
        tag: 'Credentials',
        summary: 'Report the wallet that paid under an operator credential',
        description: 'Call after a successful payment, fire and forget: a failed capture must never block the payment.',
        auth: true,
        metering: 'rate',
        body: { schema: captureSchema, required: true },
        ok: { status: 200, schema: 'WalletCaptureResponse', description: 'Recorded (first_seen false: already known; deduped: the same idempotency key).' },
        errors: ['invalid_network', 'invalid_wallet', 'invalid_credential', 'token_expired'],
      },
    ],
  },
  '/v1/reputation/{address}': {
    get: [
      'getReputation',
      {
        tag: 'Reputation',
        summary: 'The cached reputation profile of a wallet',
        description: 'Read-only: never triggers scoring. Free accounts get a redacted profile (no dimensions, activity or evidence).',
        auth: true,
        metering: 'rate',
        path: reputationParamsSchema,
        query: reputationQuerySchema,
        ok: { status: 200, schema: 'ReputationProfile', description: 'The profile.' },
        errors: ['bad_request', 'invalid_address', 'unknown_address'],
      },
    ],
  },
  '/v1/telemetry/signer-match': {
    post: [
      'reportSignerMatch',
      {
        tag: 'Telemetry',
        summary: 'Report a signer-match verdict a gate enforced',
        description: 'Always answers 202, whatever the body: telemetry never fails the caller.',
        auth: false,
        metering: 'none',
        ok: { status: 202, schema: 'TelemetryRecorded', description: 'Counted.' },
        errors: [],
      },
    ],
  },
  '/healthz': {
    get: [
      'health',
      {
        tag: 'Operations',
        summary: 'Liveness',
        auth: false,
        metering: 'none',
        ok: { status: 200, schema: 'Health', description: 'The process serves.' },
        errors: [],
      },
    ],
  },
  '/readyz': {
    get: [
      'readiness',
      {
        tag: 'Operations',
        summary: 'Readiness',
        description: 'Checks each dependency with a bounded wait; 503 takes the instance out of rotation.',
        auth: false,
        metering: 'none',
        ok: { status: 200, schema: 'Readiness', description: 'Ready, or degraded (a non-fatal dependency failed).' },
        errors: [],
      },
    ],
  },
};

const TELEMETRY_BODY = obj({ kind: str() }, { claimed_wallet: str(), signer: str(), network: str() });

function build(): Schema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, methods] of Object.entries(OPERATIONS)) {
    paths[path] = {};
    for (const [method, [id, op]] of Object.entries(methods)) paths[path][method] = operation(op, id);
  }
  // Telemetry reads its body leniently (never a 400): its joi schema (reportSchema in routes/telemetry.ts) counts an
  // unknown value as other/unknown instead of refusing it, so it is not converted here. This is what gates send.
  const telemetry = paths['/v1/telemetry/signer-match'].post as Schema;
  telemetry.requestBody = { required: false, content: { 'application/json': { schema: TELEMETRY_BODY } } };
  telemetry.responses = { '202': (telemetry.responses as Schema)['202'] };
  const readyz = paths['/readyz'].get as Schema;
  readyz.responses = {
    '200': (readyz.responses as Schema)['200'],
    '503': {
      description: 'Unavailable: the database (or Redis, when readiness requires it) failed.',
      content: { 'application/json': { schema: ref('Readiness') } },
    },
  };
  const health = paths['/healthz'].get as Schema;
  health.responses = { '200': (health.responses as Schema)['200'] };

  const documented = Object.fromEntries(Object.entries(DOCUMENTED_FIELDS).map(([name, schema]) => [name, toJsonSchema(schema)]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'kya identity API',
      version: '1.0.0',
      description:
        'Know your agent: decide whether to serve an AI agent from the verified operator behind it. Merchants call assess (usually through the gate middleware); agents verify once through a session and present the operator credential they receive.',
    },
    tags: [
      { name: 'Assess', description: 'The decision merchants ask for.' },
      { name: 'Sessions', description: 'Verification sessions and credential refresh.' },
      { name: 'Credentials', description: 'Operator credentials and wallet capture.' },
      { name: 'Reputation', description: 'Cached on-chain reputation profiles.' },
      { name: 'Telemetry', description: 'Reports from gates.' },
      { name: 'Operations', description: 'Health and readiness.' },
    ],
    paths,
    components: {
      schemas: { ...componentSchemas, ...documented },
      headers: HEADERS,
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'The account API key (as_live_…).' },
        Bearer: { type: 'http', scheme: 'bearer', description: 'The same API key as `Authorization: Bearer <key>`.' },
      },
    },
  };
}

let cached: Schema | null = null;

/** The description (built on first use; the schemas it is built from do not change at run time). */
export function openApiDocument(): Schema {
  cached ??= build();
  return cached;
}
