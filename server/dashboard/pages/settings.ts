// Overview and Settings: the account at a glance, and the verify page branding a merchant may change.
import type { Router } from 'express';
import { submittedValues } from '../../http/forms';
import type { DashboardKit } from '../kit';
import { parseSettingsForm, SETTINGS_FIELDS } from '../forms';
import { overviewBody, page, settingsBody } from '../views';

export function settingsPages(router: Router, kit: DashboardKit): void {
  const { deps, form, authed } = kit;
  const { dashboard, accounts } = deps.services;

  router.get(
    '/dashboard',
    authed(async ({ res, accountId, frame }) => {
      res.send(page(await frame('overview'), 'Overview', overviewBody(await dashboard.overview(accountId))));
    }),
  );

  router.get(
    '/dashboard/settings',
    authed(async ({ res, accountId, frame }) => {
      const f = await frame('settings');
      res.send(page(f, 'Settings', settingsBody(f.csrf, await accounts.show(accountId), await accounts.branding(accountId), {})));
    }),
  );

  router.post(
    '/dashboard/settings',
    form,
    authed(async ({ req, res, accountId, frame }) => {
      const settings = parseSettingsForm(req.body);
      if (!settings.ok) {
        const f = await frame('settings', { kind: 'alert', text: 'Please correct the fields below.' });
        const values = submittedValues(req.body, SETTINGS_FIELDS);
        res.status(400).send(page(f, 'Settings', settingsBody(f.csrf, await accounts.show(accountId), values, settings.errors, values)));
        return;
      }
      const values = settings.value;
      await accounts.setBranding(accountId, values);
      const f = await frame('settings', { kind: 'ok', text: 'Settings saved.' });
      res.send(page(f, 'Settings', settingsBody(f.csrf, await accounts.show(accountId), values, {})));
    }),
  );
}
