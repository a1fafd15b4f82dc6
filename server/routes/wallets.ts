// POST /v1/credentials/wallets: a merchant reports the wallet that paid under an operator credential.
// Mounted before the credentials router so this path is never taken for a credential id.
import { Router } from 'express';
import type { Deps } from '../deps';
import { requireApiKey } from '../http/auth';
import { route } from '../http/asyncRoute';
import { parseCaptureRequest } from '../services/walletCapture';

export function walletsRouter(deps: Deps): Router {
  const router = Router();
  const auth = requireApiKey(deps.services.accounts, deps.config.signupUrl, 'wallets');

  router.post(
    '/v1/credentials/wallets',
    auth,
    deps.meter.limited(),
    route(async (req, res) => {
      const request = parseCaptureRequest(req.body);
      res.json(await deps.services.walletCapture.capture(req.principal!.accountId, request));
    }),
  );

  return router;
}
