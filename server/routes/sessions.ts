// Verification sessions: POST /v1/sessions (merchant, API key, metered), POST /v1/sessions/public (agent-started,
// no API key, strict per-IP limit), POST /v1/sessions/refresh (rotating refresh tokens) and the poll
// GET /v1/sessions/:id (X-Poll-Secret only; an X-API-Key is accepted and ignored, so an agent that sends its
// merchant's headers everywhere still polls).
import { Router, type Request } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import Joi from 'joi';
import { ApiError, badRequest } from '../../shared/errors';
import type { Deps } from '../deps';
import { requireApiKey } from '../http/auth';
import { route } from '../http/asyncRoute';
import { validator } from '../http/validate';

export const PRODUCT_NAME_MAX = 200;
export const CONTEXT_MAX = 500;
export const CLIENT_ID_RE = /^[A-Za-z0-9._:@-]{1,100}$/;

// No coercion: a number is not a string; null means "not given".
export const createSessionSchema = Joi.object({
  context: Joi.string().max(CONTEXT_MAX).allow('', null).description('What the verification is for, shown to the person.'),
  product_name: Joi.string().max(PRODUCT_NAME_MAX).allow('', null).description('The product being bought, shown on the verify page.'),
});

export const refreshSchema = Joi.object({
  refresh_token: Joi.string().min(1).max(256).required().description('The ort_… refresh token from the last poll or refresh; each is used once.'),
});

const parseCreate = validator<CreateBody>(createSessionSchema);
const parseRefresh = validator<{ refresh_token: string }>(refreshSchema);

interface CreateBody {
  context?: string | null;
  product_name?: string | null;
}

function createFields(req: Request) {
  const body = parseCreate(req.body ?? {});
  return { context: body.context || null, productName: body.product_name?.trim() || null };
}

/** Per-IP key; IPv6 addresses are grouped by /56 so rotating within one allocation does not evade limits. */
function clientIp(req: Request): string {
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}

export function sessionsRouter(deps: Deps): Router {
  const router = Router();
  const sessions = deps.services.sessions;

  const pollLimit = deps.limiters.create({
    name: 'poll',
    windowMs: 60_000,
    limit: () => deps.config.sessions.pollPerMinute,
    key: clientIp,
  });
  const publicLimit = deps.limiters.create({
    name: 'public-session',
    windowMs: 3_600_000,
    limit: () => deps.config.sessions.publicPerIpPerHour,
    key: clientIp,
  });
  const refreshLimit = deps.limiters.create({
    name: 'refresh',
    windowMs: 60_000,
    limit: () => deps.config.sessions.pollPerMinute,
    key: clientIp,
  });

  router.post(
    '/v1/sessions',
    requireApiKey(deps.services.accounts, deps.config.signupUrl, 'sessions'),
    deps.meter.metered(),
    route(async (req, res) => {
      const fields = createFields(req);
      const { body } = await sessions.create({ kind: 'merchant', merchantAccountId: req.principal!.accountId, ...fields });
      res.json(body);
    }),
  );

  router.post(
    '/v1/sessions/public',
    publicLimit,
    route(async (req, res) => {
      const header = req.headers['x-client-id'];
      let clientId: string | null = null;
      if (header !== undefined) {
        if (typeof header !== 'string' || !CLIENT_ID_RE.test(header)) {
          throw badRequest([{ field: 'X-Client-Id', message: 'X-Client-Id must be 1 to 100 characters of letters, digits and . _ : @ -' }]);
        }
        clientId = header;
      }
      const fields = createFields(req);
      const { body } = await sessions.create({ kind: 'public', clientId, ...fields });
      res.json(body);
    }),
  );

  router.post(
    '/v1/sessions/refresh',
    refreshLimit,
    route(async (req, res) => {
      const body = parseRefresh(req.body);
      res.json(await deps.services.refreshTokens.refresh(body.refresh_token));
    }),
  );

  router.get(
    '/v1/sessions/:id',
    pollLimit,
    route(async (req, res) => {
      const secret = req.headers['x-poll-secret'];
      if (typeof secret !== 'string' || !secret.trim()) {
        throw new ApiError('unauthorized', 'The X-Poll-Secret header is required (the poll_secret returned when the session was created).');
      }
      res.setHeader('Cache-Control', 'no-store');
      res.json(await sessions.poll(req.params.id, secret.trim()));
    }),
  );

  return router;
}
