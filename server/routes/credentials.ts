// POST/GET/DELETE /v1/credentials: the calling account (itself the operator) mints, lists and revokes its
// operator credentials. Validation here; rules in CredentialLifecycleService.
import { Router } from 'express';
import Joi from 'joi';
import type { Deps } from '../deps';
import { requireApiKey } from '../http/auth';
import { route } from '../http/asyncRoute';
import { validator } from '../http/validate';

export const LABEL_MAX = 100;
export const TTL_DAYS_DEFAULT = 1;

// No coercion (http/validate): "7" and 1.5 are not valid ttl_days.
export const createCredentialSchema = Joi.object({
  label: Joi.string().max(LABEL_MAX).allow('', null).description('A name for the credential in listings.'),
  ttl_days: Joi.number().integer().min(1).max(365).description(`Lifetime in days (default ${TTL_DAYS_DEFAULT}).`),
});
const parseCreate = validator<{ label?: string | null; ttl_days?: number }>(createCredentialSchema);

export function credentialsRouter(deps: Deps): Router {
  const router = Router();
  const auth = requireApiKey(deps.services.accounts, deps.config.signupUrl, 'credentials');
  const limited = deps.meter.limited();
  const lifecycle = deps.services.credentialLifecycle;

  router.post(
    '/v1/credentials',
    auth,
    limited,
    route(async (req, res) => {
      // Every field is optional, so an empty request (no body at all) means "defaults".
      const body = parseCreate(req.body ?? {});
      const created = await lifecycle.create({
        accountId: req.principal!.accountId,
        label: body.label ? body.label : null,
        ttlDays: body.ttl_days ?? TTL_DAYS_DEFAULT,
      });
      res.json(created);
    }),
  );

  router.get(
    '/v1/credentials',
    auth,
    limited,
    route(async (req, res) => {
      res.json(await lifecycle.list(req.principal!.accountId));
    }),
  );

  router.delete(
    '/v1/credentials/:id',
    auth,
    limited,
    route(async (req, res) => {
      res.json(await lifecycle.revoke({ accountId: req.principal!.accountId, idOrToken: String(req.params.id) }));
    }),
  );

  return router;
}
