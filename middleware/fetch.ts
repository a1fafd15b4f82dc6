// Web Fetch adapter (Workers, Bun, Deno, any `(Request) => Response` server): the gate is a function
// `(Request) => Promise<Response | null>` — a denial to send, or null to go on to the handler — plus `wrap()`,
// which runs a handler behind it and captures the paying wallet after a 2xx.
import { headersOf, pathOf, webDenial, withHeader } from './adapter';
import { GateCore, type CaptureContext, type GateResult } from './core';
import { parseOptions, type GateOptions } from './options';

export type FetchGateOptions = GateOptions<Request, undefined>;

export interface FetchGate {
  /** The denial to answer with, or null when the request may go on (read the verdict with getGateResult). */
  (request: Request): Promise<Response | null>;
  /** A handler behind the gate: the denial, or the handler's answer (wallet captured after a 2xx). */
  wrap<A extends unknown[]>(handler: (request: Request, ...rest: A) => Response | Promise<Response>): (request: Request, ...rest: A) => Promise<Response>;
  /** For the bare `(Request) => Response | null` form: call with the handler's answer (capture, degraded header). */
  complete(request: Request, response: Response): Response;
  /** Closes the keep-alive sockets to the identity server. */
  close(): void;
}

interface State {
  result: GateResult;
  capture: CaptureContext;
  core: GateCore<Request, undefined>;
  degraded: string | null;
}

const states = new WeakMap<Request, State>();

/** The gate's verdict for this request (set once the gate ran on it). */
export function getGateResult(request: Request): Readonly<GateResult> | undefined {
  return states.get(request)?.result;
}

/** Builds the Fetch gate; options are validated here, once (throws GateOptionsError). */
export function createFetchGate(options: FetchGateOptions): FetchGate {
  const config = parseOptions(options);
  const core = new GateCore<Request, undefined>(config);

  const gate = (async (request: Request): Promise<Response | null> => {
    const evaluation = await core.evaluate(request, headersOf(request.headers), pathOf(request.url));
    const degraded = evaluation.kind === 'degraded-allow' ? evaluation.infraReason : null;
    states.set(request, { result: evaluation.result, capture: evaluation.capture, core, degraded });
    if (evaluation.kind === 'deny') return webDenial(config.onDenied, request, undefined, evaluation.denial);
    return null;
  }) as FetchGate;

  gate.complete = (request, response) => {
    const state = states.get(request);
    if (!state) return response;
    state.core.captureAfter(state.capture, response.status);
    return state.degraded ? withHeader(response, config.degradedHeader, state.degraded) : response;
  };
  gate.wrap =
    (handler) =>
    async (request, ...rest) => {
      const denied = await gate(request);
      if (denied) return denied;
      return gate.complete(request, await handler(request, ...rest));
    };
  gate.close = () => core.close();
  return gate;
}

export { GateOptionsError, type GateOptions, type GateDenial, type GatePolicy, type GateIdentity } from './options';
export type { GateResult } from './core';
