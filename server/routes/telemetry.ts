// POST /v1/telemetry/signer-match {kind, claimed_wallet?, signer?, network?}: older gates report the signer
// verdicts they enforced. Recorded as a counter with bounded labels; it always answers 202 and never fails
// the caller (mounted before the JSON parser, with its own lenient one).
import express, { Router, type ErrorRequestHandler } from 'express';
import { counter as metricCounter } from '../http/metrics';
import type { Deps } from '../deps';

const KINDS = new Set(['pass', 'wallet_signer_mismatch', 'wallet_auth_requires_wallet_signing']);
const NETWORKS = new Set(['evm', 'solana']);

export function telemetryRouter(deps: Deps): Router {
  const router = Router();
  const counter = metricCounter(deps.metrics, {
    name: 'kya_signer_match_reports_total',
    help: 'Signer-match verdicts reported by gates (POST /v1/telemetry/signer-match)',
    labelNames: ['kind', 'network'],
  });

  router.post('/v1/telemetry/signer-match', express.text({ type: () => true, limit: '16kb' }), (req, res) => {
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = typeof req.body === 'string' && req.body ? JSON.parse(req.body) : {};
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // Malformed telemetry is counted as "other"; the caller is never failed.
    }
    const kind = typeof body.kind === 'string' && KINDS.has(body.kind) ? body.kind : 'other';
    const network = typeof body.network === 'string' && NETWORKS.has(body.network) ? body.network : 'unknown';
    counter.inc({ kind, network });
    res.status(202).json({ recorded: true });
  });
  const lenient: ErrorRequestHandler = (_err, req, res, next) => {
    if (req.path !== '/v1/telemetry/signer-match') return next(_err);
    counter.inc({ kind: 'other', network: 'unknown' });
    res.status(202).json({ recorded: true });
  };
  router.use(lenient);
  return router;
}
