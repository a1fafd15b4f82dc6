// Response shapes of the public API as JSON Schema (OpenAPI 3.1), defined once: the API description serves
// them and the drift test validates every response the suite sees against them. Objects are closed
// (additionalProperties: false), so a field the code adds without describing it here fails that test.
import { CHAINS } from '../../shared/chains';
import { POLICY_RULES } from '../../shared/policy';
import { REPUTATION_FIELDS } from '../../shared/reputationFields';
import { DECISION_REASONS, WALLET_PROOF_REASONS } from '../../shared/types';

export type Schema = Record<string, unknown>;

export const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
export const int = (extra: Schema = {}): Schema => ({ type: 'integer', ...extra });
export const num = (extra: Schema = {}): Schema => ({ type: 'number', ...extra });
export const bool = (extra: Schema = {}): Schema => ({ type: 'boolean', ...extra });
export const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: 'array', items, ...extra });
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const dateTime = (extra: Schema = {}): Schema => str({ format: 'date-time', ...extra });
export const enumOf = (values: readonly unknown[], extra: Schema = {}): Schema => ({ enum: [...values], ...extra });

/** `schema` or null. */
export function nullable(schema: Schema): Schema {
  if (typeof schema.type === 'string')
    return { ...schema, type: [schema.type, 'null'], ...(schema.enum ? { enum: [...(schema.enum as unknown[]), null] } : {}) };
  if (schema.enum) return { ...schema, enum: [...(schema.enum as unknown[]), null] };
  return { anyOf: [schema, { type: 'null' }] };
}

/** A closed object: `required` keys always present, `optional` keys sometimes. */
export function obj(required: Record<string, Schema>, optional: Record<string, Schema> = {}, extra: Schema = {}): Schema {
  return {
    type: 'object',
    properties: { ...required, ...optional },
    required: Object.keys(required),
    additionalProperties: false,
    ...extra,
  };
}

/** Free-form guidance for agents (its keys may grow without notice). */
const openObject = (description: string): Schema => ({ type: 'object', additionalProperties: true, description });

const agentInstructions = obj({ action: str(), steps: arr(str()), user_message: str() });
const nextStepsRef = ref('NextSteps');

const nextSteps = obj(
  { action: str() },
  {
    user_message: str(),
    poll_interval_seconds: int(),
    poll_secret_header: str(),
    steps: arr(str()),
    header_name: str(),
    eta_message: str(),
    support_email: str(),
    support_subject: str(),
  },
);

const policyCheck = {
  rule: enumOf(POLICY_RULES),
  passed: bool(),
  required: { anyOf: [bool(), int(), arr(str())], description: 'What the policy asked for.' },
  actual: str({ description: 'What the operator has: a KYC or sanctions status, an age bracket, a country, or none.' }),
};

const signerMatch = obj(
  {
    kind: enumOf(['pass', 'wallet_signer_mismatch', 'wallet_auth_requires_wallet_signing']),
    claimed_operator: nullable(str()),
    signer_operator: nullable(str()),
    agent_instructions: str({ description: 'JSON-encoded {action, steps, user_message}.' }),
  },
  { expected_signer: str(), actual_signer: str(), linked_wallets: arr(str()) },
);

const signerSanctions = {
  oneOf: [
    obj({ status: enumOf(['clear']) }),
    obj({ sanctioned: enumOf([true]), ofac_label: str(), sdn_uid: str(), listed_at: nullable(str()) }),
    obj({ status: enumOf(['unavailable']) }),
  ],
};

const warning = obj({ field: str(), message: str() });

const createdSession = {
  session_id: str({ description: 'Opaque; appears in verify_url.' }),
  poll_secret: str({ description: 'Agent-only: send it as X-Poll-Secret when polling. Never put it in a URL.' }),
  verify_url: str({ format: 'uri', description: 'The page the person opens to verify.' }),
  poll_url: str({ format: 'uri' }),
  expires_at: dateTime(),
  next_steps: nextStepsRef,
  agent_memory: openObject('What an agent should remember about the pattern (never secrets).'),
  agent_instructions: str({ description: 'JSON-encoded {action, steps, user_message}, for older gates.' }),
};

const scoreStatus = enumOf(['scored', 'stale', 'known_unscored']);
const grade = nullable(str());
const nullableAny = { type: ['string', 'number', 'boolean', 'null'] };
const pickOf = (keys: readonly string[]) => obj(Object.fromEntries(keys.map((k) => [k, nullableAny])));
const score = obj(
  { value: nullable(num()), grade, scored_at: nullable(dateTime()), status: scoreStatus, version: str() },
  { confidence: nullable(num()), dimensions: pickOf(REPUTATION_FIELDS.dimensions) },
);

/** One sanctions list in /readyz: stale or unavailable lists degrade readiness (signer checks fail closed). */
const listFreshness = obj({
  list: enumOf(['wallets', 'names']),
  status: enumOf(['ok', 'stale', 'unavailable']),
  source: nullable(str()),
  entries: int(),
  as_of: nullable(dateTime()),
  age_seconds: nullable(num()),
  max_age_hours: nullable(num()),
  reason: nullable(str({ description: 'Why the list cannot be used, when it cannot.' })),
});

/** Named component schemas (responses and the documented request parts). */
export const componentSchemas: Record<string, Schema> = {
  AgentInstructions: agentInstructions,
  NextSteps: nextSteps,
  AssessResponse: obj(
    {
      decision: enumOf(['allow', 'deny']),
      decision_reasons: arr(enumOf(DECISION_REASONS)),
      identity_method: enumOf(['wallet', 'operator_token']),
      operator_verification: obj({ level: enumOf(['none', 'wallet_claimed', 'kyc_verified']) }, { operator_type: str(), verified_at: dateTime() }),
    },
    {
      policy_result: obj({ all_passed: bool(), checks: arr(obj(policyCheck)) }),
      explanation: arr(obj({ ...policyCheck, message: str(), how_to_remedy: nullable(str()) })),
      resolved_operator: str({ description: 'Wallet mode: the operator wallet the address resolves to.' }),
      linked_wallets: arr(str()),
      operator_handle: str({ description: 'operator_token mode.' }),
      verify_url: str({ format: 'uri', description: 'Only on denials a verification can fix (kyc_required, kyc_failed).' }),
      signer_match: signerMatch,
      signer_sanctions: signerSanctions,
      warnings: arr(warning, { description: 'Ignored input (unknown policy keys, an address beside operator_token).' }),
      wallet_proof: {
        description: 'Present when wallet_proof was sent in wallet mode: the verdict (the decision itself is unchanged by it; callers enforce it).',
        oneOf: [
          obj({ type: enumOf(['siwx']), verified: enumOf([true]), address: str(), chain_id: str(), expires_at: dateTime() }),
          obj({
            type: enumOf(['siwx']),
            verified: enumOf([false]),
            address: str(),
            chain_id: str(),
            reason: enumOf(WALLET_PROOF_REASONS),
            message: str(),
          }),
        ],
      },
      test: enumOf([true]),
    },
  ),
  CreatedSession: obj(createdSession),
  SessionPoll: {
    oneOf: [
      obj({ session_id: str(), status: enumOf(['pending']), retry_after_seconds: int(), next_steps: nextStepsRef }),
      obj(
        {
          session_id: str(),
          status: enumOf(['verified']),
          operator_token: str(),
          completed_at: dateTime(),
          token_ttl_seconds: int(),
          next_steps: nextStepsRef,
        },
        { refresh_token: str(), refresh_token_ttl_seconds: int() },
      ),
      obj({ session_id: str(), status: enumOf(['consumed', 'expired', 'failed', 'flagged']), next_steps: nextStepsRef }),
    ],
  },
  RefreshResponse: obj({ operator_token: str(), token_ttl_seconds: int(), refresh_token: str(), refresh_token_ttl_seconds: int() }),
  CreatedCredential: obj({
    id: str(),
    credential: str({ description: 'The opc_… value: shown only once.' }),
    prefix: str(),
    label: nullable(str()),
    expires_at: dateTime(),
    created_at: dateTime(),
    agent_memory: openObject('What an agent should remember about the credential.'),
  }),
  CredentialList: obj({
    account_verification: obj(
      { kyc_status: enumOf(['none', 'pending', 'verified', 'failed', 'flagged']) },
      {
        kyc_verified_at: nullable(dateTime()),
        jurisdiction: nullable(str()),
        age_verified: bool(),
        age_bracket: nullable(str()),
        sanctions_clear: nullable(bool()),
        sanctions_checked_at: nullable(dateTime()),
        operator_type: nullable(str()),
      },
    ),
    credentials: arr(
      obj({
        id: str(),
        prefix: str(),
        label: nullable(str()),
        expires_at: dateTime(),
        created_at: dateTime(),
        last_used_at: nullable(dateTime()),
        refreshable: bool(),
      }),
    ),
  }),
  RevokedCredential: obj({ id: str(), revoked: enumOf([true]) }),
  WalletCaptureResponse: obj({ associated: enumOf([true]), first_seen: bool() }, { deduped: enumOf([true]) }),
  ReputationProfile: obj(
    {
      subject: obj({ address: str(), chains: arr(str()) }),
      score,
      chains: arr(
        obj(
          {
            chain: str(),
            score,
            classification: obj(
              { entity_type: nullableAny },
              {
                confidence: nullableAny,
                is_known: nullableAny,
                is_known_erc8004_agent: nullableAny,
                has_candidate_payment_activity: nullableAny,
                has_verified_payment_activity: nullableAny,
                reasons: nullable(arr(str())),
              },
            ),
          },
          {
            identity: pickOf(REPUTATION_FIELDS.identity),
            activity: pickOf(REPUTATION_FIELDS.activity),
            evidence_summary: pickOf(REPUTATION_FIELDS.evidence),
          },
        ),
      ),
      agents: arr(obj({ token_id: nullableAny, chain: str(), score: nullable(num()), grade }, { name: nullableAny })),
      data_semantics: str(),
      caveats: arr(str()),
      updated_at: dateTime(),
    },
    {
      verification_level: enumOf(['none', 'wallet_claimed', 'kyc_verified'], { description: 'Paid and Enterprise only.' }),
      operator_score: obj({ score: nullable(num()), grade }, { agent_count: nullable(int()), chains_active: nullable(arr(str())) }),
      reputation: pickOf(REPUTATION_FIELDS.reputation),
    },
  ),
  TelemetryRecorded: obj({ recorded: enumOf([true]) }),
  Health: obj({ status: enumOf(['ok']) }),
  Readiness: obj({
    status: enumOf(['ready', 'degraded', 'unavailable']),
    checks: { type: 'object', additionalProperties: enumOf(['ok', 'failed']) },
    failed: arr(str({ description: 'What failed: database, redis, sanctions_wallets, sanctions_names.' })),
    sanctions: obj({ wallets: listFreshness, names: listFreshness }),
  }),
  Chain: enumOf(CHAINS),
};

/**
 * Every error body: `error` always has code and message; 400s add `details` naming each field; some codes add
 * fields inside `error` or at the top level (a session to start on token_expired, next steps).
 */
componentSchemas.Error = obj(
  {
    error: obj(
      { code: str({ description: 'One of the codes listed for the status.' }), message: str() },
      {
        details: arr(obj({ field: str({ description: 'Path of the offending input (policy.min_age, X-Client-Id).' }), message: str() })),
        signup_url: str({ format: 'uri' }),
        can_assess: bool(),
        quota_reset: str({ description: 'The date the monthly quota resets.' }),
      },
    ),
  },
  {
    ...createdSession,
    agent_instructions: {
      anyOf: [str({ description: 'JSON-encoded {action, steps, user_message}.' }), ref('AgentInstructions')],
      description: 'What an agent should do next.',
    },
  },
);

/** The error body of a response whose codes are exactly `codes`. */
export function errorBody(codes: readonly string[]): Schema {
  return { allOf: [ref('Error'), { properties: { error: { properties: { code: enumOf(codes) } } } }] };
}
