// API-key authentication (X-API-Key or Authorization: Bearer), account status and per-endpoint enablement.
import type { RequestHandler } from 'express';
import { ApiError } from '../../shared/errors';
import type { AccountsService, Endpoint } from '../services/accounts';

export function presentedApiKey(headers: Record<string, string | string[] | undefined>): string | null {
  const header = headers['x-api-key'];
  if (typeof header === 'string' && header.trim()) return header.trim();
  const authz = headers.authorization;
  if (typeof authz === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authz);
    if (match) return match[1];
  }
  return null;
}

export function requireApiKey(accounts: AccountsService, signupUrl: string, endpoint: Endpoint): RequestHandler {
  return async (req, _res, next) => {
    try {
      const presented = presentedApiKey(req.headers);
      const principal = presented ? await accounts.authenticate(presented) : null;
      if (!principal) {
        if (presented) await req.recordAuthFailure?.();
        // One answer for missing, malformed, unknown and revoked keys: no oracle.
        throw new ApiError('signup_required', 'A valid API key is required (X-API-Key header).', {
          extra: { signup_url: signupUrl },
        });
      }
      if (principal.status === 'cancelled') throw new ApiError('account_cancelled', 'This account has been cancelled.');
      if (principal.disabledEndpoints.includes(endpoint)) {
        throw new ApiError('payment_required', `The ${endpoint} endpoint is not enabled for this account.`);
      }
      req.principal = principal;
      next();
    } catch (err) {
      next(err);
    }
  };
}
