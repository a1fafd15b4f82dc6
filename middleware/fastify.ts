// Fastify adapter: `kyaPreHandler(options)` for one route's `preHandler`, or the `kyaFastify` plugin that gates
// every route registered in its scope. The verdict is `request.kya`; the paying wallet is captured after a 2xx.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GateCore, type GateResult } from './core';
import { parseOptions, type GateOptions } from './options';

declare module 'fastify' {
  interface FastifyRequest {
    /** The gate's verdict for this request (null on routes the gate does not cover). */
    kya: Readonly<GateResult> | null;
  }
}

export type FastifyGateOptions = GateOptions<FastifyRequest, FastifyReply>;

export interface FastifyGate {
  (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined>;
  close(): void;
}

/** A `preHandler` hook; options are validated here, once (throws GateOptionsError). */
export function kyaPreHandler(options: FastifyGateOptions): FastifyGate {
  const config = parseOptions(options);
  const core = new GateCore<FastifyRequest, FastifyReply>(config);
  const preHandler = (async (request: FastifyRequest, reply: FastifyReply) => {
    const evaluation = await core.evaluate(request, request.headers, request.url);
    request.kya = evaluation.result;
    if (evaluation.kind === 'deny') {
      const denial = evaluation.denial;
      if (config.onDenied) {
        await config.onDenied(request, reply, denial);
        if (reply.sent) return reply;
      }
      return reply.code(denial.status).headers(denial.headers).send(denial.body);
    }
    if (evaluation.kind === 'degraded-allow') reply.header(config.degradedHeader, evaluation.infraReason);
    // 'finish' = the response was handed to the OS; a closed connection never captures.
    const capture = evaluation.capture;
    if (core.capturesOnSuccess(capture)) reply.raw.once('finish', () => core.captureAfter(capture, reply.statusCode));
    return undefined;
  }) as FastifyGate;
  preHandler.close = () => core.close();
  return preHandler;
}

/**
 * Plugin: `app.register(kyaFastify, options)` gates the routes of the scope it is registered in (register it
 * inside `app.register(async (paid) => { … })` to gate only some routes). Sockets close with the app.
 */
export function kyaFastify(fastify: FastifyInstance, options: FastifyGateOptions, done: (err?: Error) => void): void {
  let preHandler: FastifyGate;
  try {
    preHandler = kyaPreHandler(options);
  } catch (err) {
    return done(err as Error);
  }
  if (!fastify.hasRequestDecorator('kya')) fastify.decorateRequest('kya', null);
  fastify.addHook('preHandler', preHandler);
  fastify.addHook('onClose', (_instance, closed) => {
    preHandler.close();
    closed();
  });
  done();
}
// Not encapsulated (what fastify-plugin does): the hook belongs to the scope that registers the plugin.
Object.assign(kyaFastify, { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'kya-gate' });

/** The gate's verdict (same as `request.kya`). */
export function getGateResult(request: FastifyRequest): Readonly<GateResult> | undefined {
  return request.kya ?? undefined;
}

export { GateOptionsError, type GateOptions, type GateDenial, type GatePolicy, type GateIdentity } from './options';
export type { GateResult } from './core';
