// POST /v1/telemetry/signer-match {kind, claimed_wallet?, signer?, network?}: older gates report the signer
// verdicts they enforced. Recorded as a counter with bounded labels; it always answers 202 and never fails
// the caller (mounted before the JSON parser, with its own lenient one).
import express, { Router, type ErrorRequestHandler } from 'express';
import Joi from 'joi';
import { counter as metricCounter } from '../http/metrics';
import type { Deps } from '../deps';

const OTHER = { kind: 'other', network: 'unknown' } as const;

/** A report's labels: a value the counter does not know is counted as other/unknown, never refused. */
const reportSchema = Joi.object({
  kind: Joi.string().valid('pass', 'wallet_signer_mismatch', 'wallet_auth_requires_wallet_signing').failover(OTHER.kind).default(OTHER.kind),
  network: Joi.string().valid('evm', 'solana').failover(OTHER.network).default(OTHER.network),
})
  .failover(OTHER)
  .prefs({ allowUnknown: true, stripUnknown: true });

function labelsOf(text: unknown): { kind: string; network: string } {
  let parsed: unknown;
  try {
    parsed = typeof text === 'string' && text ? JSON.parse(text) : {};
  } catch {
    parsed = null; // malformed: counted as other
  }
  return (reportSchema.validate(parsed) as { value: { kind: string; network: string } }).value;
}

export function telemetryRouter(deps: Deps): Router {
  const router = Router();
  const counter = metricCounter(deps.metrics, {
    name: 'kya_signer_match_reports_total',
    help: 'Signer-match verdicts reported by gates (POST /v1/telemetry/signer-match)',
    labelNames: ['kind', 'network'],
  });

  router.post('/v1/telemetry/signer-match', express.text({ type: () => true, limit: '16kb' }), (req, res) => {
    counter.inc(labelsOf(req.body));
    res.status(202).json({ recorded: true });
  });
  const lenient: ErrorRequestHandler = (_err, req, res, next) => {
    if (req.path !== '/v1/telemetry/signer-match') return next(_err);
    counter.inc(OTHER);
    res.status(202).json({ recorded: true });
  };
  router.use(lenient);
  return router;
}
