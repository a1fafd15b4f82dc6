// Webhooks: the endpoints, adding one (its signing secret shown once), an endpoint's delivery log, rolling its
// secret, removing it (after a confirmation page) and sending a delivery again.
import type { Router } from 'express';
import { ApiError } from '../../../shared/errors';
import { submittedValues } from '../../http/forms';
import type { Ctx, DashboardKit } from '../kit';
import { parseResendForm, parseWebhookForm } from '../forms';
import { endpointBody, page, removeEndpointBody, webhooksBody, type Frame } from '../views';

export function webhookPages(router: Router, kit: DashboardKit): void {
  const { deps, form, authed } = kit;
  const { dashboard, webhooks } = deps.services;
  const production = deps.config.env === 'production';

  async function webhooksPage(
    ctx: Ctx,
    status: number,
    errors: Record<string, string>,
    values: { url?: string; types?: string[] },
    created: { id: string; secret: string } | null,
    notice: Frame['notice'] = null,
  ) {
    const f = await ctx.frame('webhooks', notice);
    ctx.res.status(status).send(page(f, 'Webhooks', webhooksBody(f.csrf, await webhooks.listEndpoints(ctx.accountId), errors, values, created)));
  }

  router.get(
    '/dashboard/webhooks',
    authed(async (ctx) => webhooksPage(ctx, 200, {}, {}, null, (await dashboard.takeFlash(ctx.sessionId))?.notice ?? null)),
  );

  router.post(
    '/dashboard/webhooks',
    form,
    authed(async (ctx) => {
      const input = parseWebhookForm(ctx.req.body, production);
      const types = ([] as unknown[]).concat((ctx.req.body as Record<string, unknown>).event_types ?? []).filter((t): t is string => typeof t === 'string');
      const values = { url: submittedValues(ctx.req.body, ['url']).url, types };
      if (!input.ok) return webhooksPage(ctx, 400, input.errors, values, null);
      try {
        const { endpoint, secret: signing } = await webhooks.addEndpoint(ctx.accountId, input.value);
        await webhooksPage(ctx, 200, {}, {}, { id: endpoint.id, secret: signing });
      } catch (err) {
        if (!(err instanceof ApiError) || err.code !== 'conflict') throw err;
        await webhooksPage(ctx, 409, { url: err.message }, values, null);
      }
    }),
  );

  async function endpointPage(ctx: Ctx, id: string, notice: Frame['notice'] = null) {
    const endpoint = (await webhooks.listEndpoints(ctx.accountId)).find((e) => e.id === id);
    const signing = endpoint && (await webhooks.secret(ctx.accountId, id));
    if (!endpoint || !signing) {
      await webhooksPage(ctx, 404, {}, {}, null, { kind: 'alert', text: 'No such endpoint.' });
      return;
    }
    const f = await ctx.frame('webhooks', notice);
    ctx.res.send(page(f, 'Webhook endpoint', endpointBody(f.csrf, endpoint, signing, await webhooks.deliveries(ctx.accountId, id))));
  }

  router.get(
    '/dashboard/webhooks/:id',
    authed((ctx) => endpointPage(ctx, String(ctx.req.params.id))),
  );

  router.post(
    '/dashboard/webhooks/:id/roll',
    form,
    authed(async (ctx) => {
      await webhooks.rollSecret(ctx.accountId, String(ctx.req.params.id));
      await endpointPage(ctx, String(ctx.req.params.id), { kind: 'ok', text: 'New signing secret in effect for the next delivery.' });
    }),
  );

  // Removing is a two-step action: the endpoint page links to this confirmation, whose form does the removal.
  router.get(
    '/dashboard/webhooks/:id/remove',
    authed(async (ctx) => {
      const endpoint = (await webhooks.listEndpoints(ctx.accountId)).find((e) => e.id === String(ctx.req.params.id));
      if (!endpoint) return webhooksPage(ctx, 404, {}, {}, null, { kind: 'alert', text: 'No such endpoint.' });
      const f = await ctx.frame('webhooks');
      ctx.res.send(page(f, 'Remove webhook endpoint', removeEndpointBody(f.csrf, endpoint)));
    }),
  );

  router.post(
    '/dashboard/webhooks/:id/delete',
    form,
    authed(async (ctx) => {
      const removed = await webhooks.removeEndpoint(ctx.accountId, String(ctx.req.params.id));
      if (!removed) return webhooksPage(ctx, 404, {}, {}, null, { kind: 'alert', text: 'No such endpoint.' });
      await dashboard.setFlash(ctx.sessionId, { notice: { kind: 'ok', text: 'Endpoint removed.' } });
      ctx.res.redirect(303, '/dashboard/webhooks');
    }),
  );

  router.post(
    '/dashboard/webhooks/deliveries/:id/resend',
    form,
    authed(async (ctx) => {
      const ok = await webhooks.resend(ctx.accountId, String(ctx.req.params.id));
      await endpointPage(
        ctx,
        parseResendForm(ctx.req.body) ?? '',
        ok ? { kind: 'ok', text: 'Delivery queued again.' } : { kind: 'alert', text: 'No such delivery.' },
      );
    }),
  );
}
