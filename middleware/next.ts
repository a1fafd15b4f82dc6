// Next.js adapter (App Router) over the Fetch gate: `withKya()` wraps a route handler, `kyaMiddleware()` is the
// helper for `middleware.ts`. NextRequest extends Request and Next accepts any Response, so nothing from `next`
// is imported at run time.
import { createFetchGate, getGateResult, type FetchGate, type FetchGateOptions } from './fetch';

/**
 * Wraps an App Router route handler: denied requests get the gate's answer, allowed ones reach `handler`
 * (read the verdict with getGateResult(req)); the paying wallet is captured after a 2xx.
 */
export function withKya<R extends Request, C = unknown>(
  gateOrOptions: FetchGate | FetchGateOptions,
  handler: (request: R, context: C) => Response | Promise<Response>,
): ((request: R, context: C) => Promise<Response>) & { gate: FetchGate } {
  const gate = typeof gateOrOptions === 'function' ? gateOrOptions : createFetchGate(gateOrOptions);
  const wrapped = gate.wrap(handler as (request: Request, context: C) => Response | Promise<Response>) as (request: R, context: C) => Promise<Response>;
  return Object.assign(wrapped, { gate });
}

/** Request headers the middleware helper forwards to the route (overwriting any the client sent). */
export const KYA_HEADERS = { decision: 'x-kya-decision', degraded: 'x-kya-degraded', operatorHandle: 'x-kya-operator-handle', wallet: 'x-kya-wallet' } as const;

export interface KyaMiddleware {
  /**
   * The denial to return from `middleware.ts`, or null: then continue with `NextResponse.next({ request: { headers } })`
   * using `forwardHeaders(req)` so route handlers can read the verdict.
   */
  (request: Request): Promise<Response | null>;
  /** The request headers plus the verdict as `x-kya-*` headers (the client's own `x-kya-*` are dropped). */
  forwardHeaders(request: Request): Headers;
  gate: FetchGate;
}

/**
 * For `middleware.ts`. Capture after a 2xx cannot run there (middleware never sees the route's status): use
 * `withKya` on routes that take wallet payments, or `captureOn: 'manual'`.
 */
export function kyaMiddleware(options: FetchGateOptions | FetchGate): KyaMiddleware {
  const gate = typeof options === 'function' ? options : createFetchGate(options);
  const middleware = ((request: Request) => gate(request)) as KyaMiddleware;
  middleware.forwardHeaders = (request) => {
    const headers = new Headers(request.headers);
    for (const name of Object.values(KYA_HEADERS)) headers.delete(name);
    const result = getGateResult(request);
    if (!result) return headers;
    headers.set(KYA_HEADERS.decision, result.decision);
    if (result.degraded) headers.set(KYA_HEADERS.degraded, result.infra_reason ?? 'true');
    if (result.operator_handle) headers.set(KYA_HEADERS.operatorHandle, result.operator_handle);
    if (result.identity.wallet_address) headers.set(KYA_HEADERS.wallet, result.identity.wallet_address);
    return headers;
  };
  middleware.gate = gate;
  return middleware;
}

export { createFetchGate, getGateResult, type FetchGate, type FetchGateOptions } from './fetch';
export { GateOptionsError, type GateOptions, type GateDenial, type GateResult } from './fetch';
