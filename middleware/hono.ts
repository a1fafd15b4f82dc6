// Hono adapter: a middleware that answers denials itself and otherwise sets `c.get('kya')` (the verdict), runs
// the route, then captures the paying wallet after a 2xx. Only Hono's types are imported.
import type { Context, MiddlewareHandler } from 'hono';
import { headersOf, pathOf, webDenial } from './adapter';
import { GateCore, type GateResult } from './core';
import { parseOptions, type GateOptions } from './options';

/** `new Hono<{ Variables: KyaVariables }>()` types `c.get('kya')`. */
export type KyaVariables = { kya: Readonly<GateResult> };

export type HonoGateOptions = GateOptions<Context, Context>;

export type HonoGate = MiddlewareHandler<{ Variables: KyaVariables }> & {
  /** Closes the keep-alive sockets to the identity server. */
  close(): void;
};

/** Builds the Hono middleware; options are validated here, once (throws GateOptionsError). */
export function kya(options: HonoGateOptions): HonoGate {
  const config = parseOptions(options);
  const core = new GateCore<Context, Context>(config);
  const middleware = (async (c: Context, next: () => Promise<void>) => {
    const evaluation = await core.evaluate(c, headersOf(c.req.raw.headers), pathOf(c.req.url));
    c.set('kya', evaluation.result);
    if (evaluation.kind === 'deny') return webDenial(config.onDenied, c, c, evaluation.denial);
    await next();
    if (evaluation.kind === 'degraded-allow') c.header(config.degradedHeader, evaluation.infraReason);
    core.captureAfter(evaluation.capture, c.res.status);
  }) as HonoGate;
  middleware.close = () => core.close();
  return middleware;
}

/** The gate's verdict (same as `c.get('kya')`). */
export function getGateResult(c: Context): Readonly<GateResult> | undefined {
  return c.get('kya') as Readonly<GateResult> | undefined;
}

export { GateOptionsError, type GateOptions, type GateDenial, type GatePolicy, type GateIdentity } from './options';
export type { GateResult } from './core';
