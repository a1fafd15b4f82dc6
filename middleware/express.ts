// The Express adapter — the only file that imports express. Turns the core's allow | degraded-allow | deny
// union into next() or a response, keeps the per-request result, and fires wallet capture after a 2xx.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { GateCore, type CaptureContext, type Evaluation, type GateResult } from './core';
import type { CaptureInput, CaptureResult } from './capture';
import { parseOptions, type GateOptions, type GateDenial } from './options';
import { hasPaymentHeader } from './signer';

interface RequestState {
  result: GateResult;
  capture: CaptureContext;
  core: GateCore<Request, Response>;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- augmenting @types/express's global Express namespace is the only way to type req.kya
  namespace Express {
    interface Request {
      /** The gate's verdict for this request (also `getGateResult(req)`). */
      kya?: Readonly<GateResult>;
    }
  }
}

// Request-scoped by construction: the entry lives exactly as long as the request object.
const states = new WeakMap<Request, RequestState>();

export interface Gate extends RequestHandler {
  /** Closes the keep-alive sockets to the identity server (graceful shutdown, tests). */
  close(): void;
}

/** Builds the gate middleware; every option is validated here, once (throws GateOptionsError). */
export function createGate(options: GateOptions<Request, Response>): Gate {
  const config = parseOptions(options);
  const core = new GateCore<Request, Response>(config);

  // Not an async function on purpose: a cached decision is applied synchronously, without a promise per
  // request; only a call to the identity server (or a minted session) goes through the promise path.
  const apply = (req: Request, res: Response, next: NextFunction, evaluation: Evaluation): void => {
    states.set(req, { result: evaluation.result, capture: evaluation.capture, core });
    req.kya = evaluation.result;
    if (evaluation.kind === 'deny') {
      sendDenial(req, res, evaluation.denial, config.onDenied).catch(next);
      return;
    }
    if (evaluation.kind === 'degraded-allow') res.setHeader(config.degradedHeader, evaluation.infraReason);
    const capture = evaluation.capture;
    // 'finish' = the response was fully handed to the OS; a closed connection or a ≥ 400 means no capture.
    if (core.capturesOnSuccess(capture)) res.once('finish', () => core.captureAfter(capture, res.statusCode));
    next();
  };
  const gate = function kyaGate(req: Request, res: Response, next: NextFunction): void {
    let evaluation: Evaluation | Promise<Evaluation>;
    try {
      evaluation = core.evaluate(req, req.headers, req.originalUrl);
    } catch (err) {
      return next(err);
    }
    if (evaluation instanceof Promise) evaluation.then((e) => apply(req, res, next, e), next);
    else apply(req, res, next, evaluation);
  } as Gate;
  gate.close = () => core.close();
  return gate;
}

/**
 * Runs the gate only when the request carries a payment header (x402 `PAYMENT-SIGNATURE` / `X-PAYMENT`, or
 * `Authorization: Payment`), so a first request whose payment has not happened yet still reaches the route
 * and gets its 402 challenge, even with an unproven `X-Wallet-Address`; the paid retry is then gated (and its
 * payment signature is the wallet's proof). Accepts options (builds its own gate) or an existing gate.
 */
export function conditionalGate(gateOrOptions: Gate | GateOptions<Request, Response>): Gate {
  const gate = typeof gateOrOptions === 'function' ? gateOrOptions : createGate(gateOrOptions);
  const conditional = function kyaConditionalGate(req: Request, res: Response, next: NextFunction) {
    if (!hasPaymentHeader(req.headers)) return next();
    return gate(req, res, next);
  } as Gate;
  conditional.close = () => gate.close();
  return conditional;
}

/** The gate's verdict for this request (assess data, operator handle, signer verdict, quota, degraded state). */
export function getGateResult(req: Request): Readonly<GateResult> | undefined {
  return states.get(req)?.result;
}

/**
 * Reports the wallet that paid for this request (for `captureOn: 'manual'`, e.g. after settlement).
 * Resolves — never rejects — with what happened; a no-op for wallet-authenticated requests.
 */
export function captureWallet(req: Request, input: CaptureInput): Promise<CaptureResult> {
  const state = states.get(req);
  if (!state) return Promise.resolve({ status: 'skipped', reason: 'not_gated' });
  return state.core.capture(state.capture, input);
}

async function sendDenial(
  req: Request,
  res: Response,
  denial: GateDenial,
  onDenied: ((req: Request, res: Response, denial: GateDenial) => unknown) | undefined,
): Promise<void> {
  if (onDenied) {
    await onDenied(req, res, denial);
    if (res.headersSent) return;
  }
  for (const [name, value] of Object.entries(denial.headers)) res.setHeader(name, value);
  res.status(denial.status).json(denial.body);
}
