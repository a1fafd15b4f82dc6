// The dashboard's forms below the browser: each bad field re-renders the form with a 400 and a message beside
// that field (nothing stored), good input is stored normalised, the webhook endpoint limit answers 409 on the
// form, and the activity filter ignores values it does not know instead of refusing the page.
import request from 'supertest';
import { createMerchant, useClockedHarness } from '../support/harness';

describe('dashboard forms', () => {
  const { h } = useClockedHarness('2026-05-01T10:00:00.000Z', ['accounts', 'webhook_endpoints']);

  /** A signed-in dashboard session whose `post` sends a form with the page's CSRF token. */
  async function signedIn(apiKey: string) {
    const { sessionId } = (await h.deps.services.dashboard.signInWithKey(apiKey))!;
    const cookie = `kya_dashboard=${sessionId}`;
    const get = (path: string) => request(h.app).get(path).set('Cookie', cookie);
    const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/dashboard/settings')).text)![1];
    const post = (path: string, fields: Record<string, string | string[]>) =>
      request(h.app)
        .post(path)
        .set('Cookie', cookie)
        .type('form')
        .send({ csrf, ...fields });
    return { get, post };
  }
  /** Each field's message on the page, by field. */
  const messages = (text: string) => Object.fromEntries([...text.matchAll(/<p class="alert" id="([a-z_]+)-error">([^<]*)<\/p>/g)].map((m) => [m[1], m[2]]));

  it('names each bad settings field, stores nothing, and keeps what was typed', async () => {
    const m = await createMerchant(h.deps, { displayName: 'Acme' });
    const { post } = await signedIn(m.apiKey);
    const res = await post('/dashboard/settings', { display_name: 'x'.repeat(81), support_email: 'help at acme', logo_url: 'http://cdn.example.com/a.png' });
    expect(res.status).toBe(400);
    expect(messages(res.text)).toEqual({
      display_name: 'Use at most 80 characters.',
      support_email: 'Enter an email address such as support@example.com.',
      logo_url: 'Enter an https:// URL of an image.',
    });
    expect(res.text).toContain('value="help at acme"');
    expect(res.text).toContain(
      'id="display_name" name="display_name" maxlength="80" value="' + 'x'.repeat(81) + '" aria-invalid="true" aria-describedby="display_name-error" autofocus',
    );
    expect(await h.deps.services.accounts.branding(m.accountId)).toEqual({ display_name: 'Acme', support_email: null, logo_url: null });

    const again = await post('/dashboard/settings', {
      display_name: 'Acme',
      logo_url: 'https://user:pw@cdn.example.com/a.png',
      support_email: ['a@b.example', 'c@d.example'],
    });
    expect(messages(again.text)).toEqual({
      support_email: 'Enter an email address such as support@example.com.',
      logo_url: 'Enter an https:// URL of an image.',
    });
  });

  it('stores settings trimmed, and an emptied field clears its setting', async () => {
    const m = await createMerchant(h.deps, { displayName: 'Acme' });
    const { post } = await signedIn(m.apiKey);
    const saved = await post('/dashboard/settings', {
      display_name: '  Acme Wines ',
      support_email: ' help@acme.example ',
      logo_url: 'https://cdn.example.com/a.png',
    });
    expect(saved.status).toBe(200);
    expect(saved.text).toContain('Settings saved.');
    expect(await h.deps.services.accounts.branding(m.accountId)).toEqual({
      display_name: 'Acme Wines',
      support_email: 'help@acme.example',
      logo_url: 'https://cdn.example.com/a.png',
    });
    await post('/dashboard/settings', { display_name: 'Acme Wines', support_email: '', logo_url: '   ' });
    expect(await h.deps.services.accounts.branding(m.accountId)).toEqual({ display_name: 'Acme Wines', support_email: null, logo_url: null });
  });

  it('names each bad webhook field, keeps the ticked event types, and answers the endpoint limit with 409 on the form', async () => {
    const m = await createMerchant(h.deps);
    const { post } = await signedIn(m.apiKey);
    const bad = await post('/dashboard/webhooks', { url: 'http://example.com/hooks', event_types: 'session.bogus' });
    expect(bad.status).toBe(400);
    expect(messages(bad.text)).toEqual({
      url: 'The URL must start with https:// (http:// only for localhost).',
      event_types: 'Choose at least one event type.',
    });
    expect(bad.text).toContain('value="http://example.com/hooks"');
    expect(bad.text).not.toMatch(/name="event_types" value="[a-z._]+" checked/);

    const one = await post('/dashboard/webhooks', { url: ' https://hooks.example.com/kya ', event_types: 'session.verified' });
    expect(one.status).toBe(200);
    expect(one.text).toContain('id="created-secret"');
    const added = await h.deps.services.webhooks.listEndpoints(m.accountId);
    expect(added.map((e) => [e.url, e.event_types])).toEqual([['https://hooks.example.com/kya', ['session.verified']]]);

    for (let i = 1; i < 10; i++)
      await post('/dashboard/webhooks', { url: `https://hooks.example.com/${i}`, event_types: ['session.verified', 'session.failed'] });
    const eleventh = await post('/dashboard/webhooks', { url: 'https://hooks.example.com/11', event_types: ['session.verified', 'session.failed'] });
    expect(eleventh.status).toBe(409);
    expect(messages(eleventh.text)).toEqual({ url: 'An account can have at most 10 endpoints. Remove one to add another.' });
    expect(eleventh.text).toMatch(/name="event_types" value="session.failed" checked/);
    expect(await h.deps.services.webhooks.listEndpoints(m.accountId)).toHaveLength(10);
  });

  it('shows the activity page for a filter with unknown values, ignoring them', async () => {
    const m = await createMerchant(h.deps);
    const { get } = await signedIn(m.apiKey);
    const res = await get('/dashboard/activity?decision=maybe&reason=nope&kind=wallet&from=2026-13-45&to=2026-05-01&before=abc&before=1');
    expect(res.status).toBe(200);
    // Only the known values survive into the CSV link.
    expect(res.text).toContain('href="/dashboard/activity.csv?kind=wallet&amp;to=2026-05-01"');
  });
});
