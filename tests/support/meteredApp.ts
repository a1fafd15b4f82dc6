// A tiny app built from the real request plumbing (request context, JSON parser with the configured limit,
// requireApiKey, deps.meter, validate, the 404 and the one error handler), so auth, rate-limit, quota and
// error-format behaviour can be tested independently of any one resource's routes.
import express, { type Express } from 'express';
import Joi from 'joi';
import type { Deps } from '../../server/deps';
import '../../server/http/types';
import { requestContext } from '../../server/http/requestContext';
import { requireApiKey } from '../../server/http/auth';
import { validate } from '../../server/http/validate';
import { errorHandler, notFound } from '../../server/http/errorHandler';

const bodySchema = Joi.object({ ok: Joi.boolean().required(), fail_with: Joi.number().integer().min(400).max(599) });

/**
 * Routes:
 * - `POST /t/metered` (endpoint `assess`): rate limit + monthly quota; body `{ok: boolean}` else 400 naming `ok`;
 *   `{ok: true, fail_with: 500}` makes the handler itself fail after metering.
 * - `GET /t/limited` (endpoint `reputation`): rate limit only.
 * - `GET /t/boom`: throws an unexpected error carrying internal details.
 * - `GET /t/ip`: the client address as Express sees it (trust proxy).
 * - `GET /t/item/:id`: echoes a path parameter (percent-decoding errors).
 * - `GET /t/slow?ms=N`: authenticated, answers after N ms (in-flight requests during shutdown).
 */
export function meteredApp(deps: Deps): Express {
  const app = express();
  app.set('trust proxy', deps.config.trustProxy);
  app.use(requestContext(deps.logger));
  app.use(express.json({ limit: deps.config.bodyLimit }));
  const { accounts } = deps.services;
  const signup = deps.config.signupUrl;

  app.post('/t/metered', requireApiKey(accounts, signup, 'assess'), deps.meter.metered(), (req, res) => {
    const body = validate<{ ok: boolean; fail_with?: number }>(bodySchema, req.body);
    if (body.fail_with) throw new Error(`handler failure ${body.fail_with}`);
    res.json({ ok: body.ok, account: req.principal!.accountId, quota: req.quota ?? null });
  });
  app.get('/t/limited', requireApiKey(accounts, signup, 'reputation'), deps.meter.limited(), (req, res) => {
    res.json({ account: req.principal!.accountId });
  });
  app.get('/t/boom', () => {
    throw new Error('relation "secret_table" does not exist at /srv/kya/server/db.ts:42');
  });
  app.get('/t/ip', (req, res) => {
    res.json({ ip: req.ip });
  });
  app.get('/t/item/:id', (req, res) => {
    res.json({ id: req.params.id });
  });
  app.get('/t/slow', requireApiKey(accounts, signup, 'reputation'), async (req, res) => {
    await new Promise((r) => setTimeout(r, Number(req.query.ms ?? 200)));
    res.json({ slow: true });
  });

  app.use(notFound);
  app.use(errorHandler);
  return app;
}
