// The closed set of API error codes, the HTTP status each one maps to, and the one error type that
// carries them. Shared by the server (which throws it) and the gate (which reads the same codes).

export const ERROR_STATUS = {
  bad_request: 400,
  invalid_address: 400,
  invalid_identity: 400,
  invalid_test_address: 400,
  invalid_network: 400,
  invalid_wallet: 400,
  signup_required: 401,
  unauthorized: 401,
  invalid_credential: 401,
  token_expired: 401,
  payment_required: 402,
  account_cancelled: 403,
  forbidden: 403,
  not_found: 404,
  unknown_address: 404,
  conflict: 409,
  kyc_required: 409,
  payload_too_large: 413,
  rate_limited: 429,
  quota_exceeded: 429,
  internal_error: 500,
  api_error: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, value);
}

/** One offending input field of a 400: `field` is a dotted path into the request (`policy.min_age`). */
export interface FieldProblem {
  field: string;
  message: string;
}

/** The `agent_instructions` envelope: what an agent should do next. */
export interface AgentInstructions {
  action: string;
  steps: string[];
  user_message: string;
}

/** Wire shape of every error response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: FieldProblem[]; [extra: string]: unknown };
  [topLevel: string]: unknown;
}

export interface ApiErrorOptions {
  /** 400s: which fields were wrong. */
  details?: FieldProblem[];
  /** Extra fields inside the `error` object (e.g. `signup_url`, `can_assess`). */
  extra?: Record<string, unknown>;
  /** Extra top-level fields (e.g. `verify_url`, `next_steps`, `agent_instructions`). */
  top?: Record<string, unknown>;
  /** Response headers to set (e.g. `Retry-After`). */
  headers?: Record<string, string>;
}

/** A domain failure with a code from the closed union; the status is derived from the code, never chosen. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: FieldProblem[];
  readonly extra?: Record<string, unknown>;
  readonly top?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = options.details;
    this.extra = options.extra;
    this.top = options.top;
    this.headers = options.headers;
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message, ...this.extra };
    if (this.details) error.details = this.details;
    return { error, ...this.top };
  }
}

/** A 400 `bad_request` (or another 400 code) naming the offending fields. */
export function badRequest(details: FieldProblem[], code: ErrorCode = 'bad_request', message?: string): ApiError {
  const text = message ?? `Invalid request: ${details.map((d) => d.field).join(', ')}`;
  return new ApiError(code, text, { details });
}
