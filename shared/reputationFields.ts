// The fields of a reputation profile's pass-through objects, in the documented order. The service picks them
// from jsonb columns (which do not keep key order) and the API description lists the same names.
export const REPUTATION_FIELDS = {
  dimensions: ['identity', 'activity', 'capability', 'reach', 'trust'],
  identity: ['ens_name', 'website_url', 'github_url'],
  activity: [
    'total_candidate_transactions',
    'total_verified_transactions',
    'as_candidate_payer',
    'as_candidate_payee',
    'as_verified_payer',
    'as_verified_payee',
    'counterparties_count',
    'active_days',
    'active_months',
    'first_candidate_tx_at',
    'last_candidate_tx_at',
    'first_verified_tx_at',
    'last_verified_tx_at',
  ],
  evidence: [
    'metadata_kind',
    'has_a2a_agent_card',
    'website_url',
    'website_reachable',
    'website_mentions_mcp',
    'website_mentions_x402',
    'github_url',
    'github_stars',
  ],
  operatorScore: ['score', 'grade', 'agent_count', 'chains_active'],
  reputation: ['feedback_count', 'client_count', 'trust_avg', 'uptime_avg', 'activity_avg', 'last_feedback_at'],
} as const satisfies Record<string, readonly string[]>;
