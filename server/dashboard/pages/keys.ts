// API keys: rotation for every plan (Post/Redirect/Get, the new key shown once from a server-side flash), and
// adding and revoking single keys on Enterprise (the last active key never goes).
import type { Router } from 'express';
import { ApiError } from '../../../shared/errors';
import type { Ctx, DashboardKit } from '../kit';
import type { Flash } from '../service';
import { keysBody, page, revokeKeyBody, type Frame } from '../views';

export function keyPages(router: Router, kit: DashboardKit): void {
  const { deps, form, authed } = kit;
  const { dashboard, accounts } = deps.services;

  async function keysPage(ctx: Ctx, status: number, notice: Frame['notice'], newKey: Flash['newKey'] = undefined) {
    const f = await ctx.frame('keys', notice);
    ctx.res.status(status).send(page(f, 'API keys', keysBody(f.csrf, await accounts.show(ctx.accountId), newKey ?? null)));
  }

  router.get(
    '/dashboard/keys',
    authed(async (ctx) => {
      const flash = await dashboard.takeFlash(ctx.sessionId);
      await keysPage(ctx, 200, flash?.notice ?? null, flash?.newKey);
    }),
  );

  // Post/Redirect/Get: the new key travels to the next page in a one-time server-side flash, so a reload
  // neither re-posts the form nor shows the key again, and the key never appears in a URL.
  router.post(
    '/dashboard/keys/rotate',
    form,
    authed(async ({ res, accountId, sessionId }) => {
      const rotated = await accounts.rotateKey(accountId);
      await dashboard.setFlash(sessionId, { newKey: { key: rotated.api_key, others: 'revoked' } });
      res.redirect(303, '/dashboard/keys');
    }),
  );

  /** Several keys are an Enterprise feature: elsewhere the controls are absent and their routes answer 403. */
  async function enterpriseOnly(ctx: Ctx): Promise<boolean> {
    if ((await accounts.show(ctx.accountId)).tier === 'enterprise') return true;
    await keysPage(ctx, 403, {
      kind: 'alert',
      text: 'Adding and revoking single API keys is available on the Enterprise plan only. Use Rotate API key to replace your key.',
    });
    return false;
  }

  const LAST_KEY = 'This is your only active API key, so it cannot be revoked. Rotate it instead: that issues a new key and revokes this one.';

  router.post(
    '/dashboard/keys/add',
    form,
    authed(async (ctx) => {
      if (!(await enterpriseOnly(ctx))) return;
      const added = await accounts.addKey(ctx.accountId);
      await dashboard.setFlash(ctx.sessionId, { newKey: { key: added.api_key, others: 'kept' } });
      ctx.res.redirect(303, '/dashboard/keys');
    }),
  );

  router.get(
    '/dashboard/keys/:id/revoke',
    authed(async (ctx) => {
      if (!(await enterpriseOnly(ctx))) return;
      const active = (await accounts.show(ctx.accountId)).keys.filter((k) => !k.revoked_at);
      const key = active.find((k) => k.id === String(ctx.req.params.id));
      if (!key) return keysPage(ctx, 404, { kind: 'alert', text: 'No such active key.' });
      if (active.length === 1) return keysPage(ctx, 409, { kind: 'alert', text: LAST_KEY });
      const f = await ctx.frame('keys');
      ctx.res.send(page(f, 'Revoke API key', revokeKeyBody(f.csrf, key)));
    }),
  );

  router.post(
    '/dashboard/keys/:id/revoke',
    form,
    authed(async (ctx) => {
      if (!(await enterpriseOnly(ctx))) return;
      try {
        const revoked = await accounts.revokeKey(ctx.accountId, String(ctx.req.params.id));
        await dashboard.setFlash(ctx.sessionId, { notice: { kind: 'ok', text: `Key ${revoked.prefix} revoked: requests that present it are refused.` } });
        ctx.res.redirect(303, '/dashboard/keys');
      } catch (err) {
        if (!(err instanceof ApiError) || (err.code !== 'not_found' && err.code !== 'conflict')) throw err;
        await keysPage(ctx, err.status, { kind: 'alert', text: err.code === 'conflict' ? LAST_KEY : 'No such active key.' });
      }
    }),
  );
}
