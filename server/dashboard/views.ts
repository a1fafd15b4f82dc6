// Server-rendered views of the merchant dashboard. Plain forms and links (no JavaScript needed); every value
// is escaped by the `html` tag; the chart is inline SVG (attributes, so the strict CSP needs no inline styles).
import { html, SafeHtml } from '../verify/html';
import { WEBHOOK_EVENT_TYPES } from '../../shared/webhookSignature';
import { DECISION_REASONS } from '../../shared/types';
import type { AuditRow } from '../repositories/audit';
import { ENDPOINTS, type AccountView } from '../services/accounts';
import type { MerchantCredentialView } from './service';
import type { Branding } from '../services/accounts';
import type { WebhookEndpointView } from '../webhooks/service';
import type { DeliveryLogRow } from '../repositories/webhooks';
import { SETTINGS_FIELDS } from './forms';

const STYLE = new SafeHtml(`
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1b1f24}
header{background:#14213d;color:#fff;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center}
header strong{margin-right:auto}header a{color:#dfe7ff;text-decoration:none;padding:.2rem .3rem}header a[aria-current]{color:#fff;border-bottom:2px solid #fff}
footer{max-width:64rem;margin:0 auto;padding:0 1rem 2rem;color:#555}header form{display:inline}header button{margin:0;background:transparent;border:1px solid #8fa3d1;padding:.2rem .6rem}
main{max-width:64rem;margin:1.25rem auto;padding:0 1rem}.card{background:#fff;border:1px solid #d8dce1;border-radius:10px;padding:1.25rem;margin-bottom:1rem;overflow-x:auto}
h1{font-size:1.35rem;margin:0 0 1rem}h2{font-size:1.05rem;margin:0 0 .6rem}.muted{color:#59636e}
label{display:block;font-weight:600;margin:.7rem 0 .25rem}input,select{width:100%;max-width:32rem;padding:.45rem .55rem;border:1px solid #aab2bb;border-radius:6px;font:inherit}
input[type=checkbox]{width:auto;margin-right:.4rem}label.check{font-weight:400;margin:.25rem 0}
button{margin-top:.8rem;padding:.5rem 1rem;border:0;border-radius:6px;background:#0b5cd5;color:#fff;font:inherit;font-weight:600;cursor:pointer}
button.danger{background:#b00020}button.secondary{background:#e8ebef;color:#1b1f24}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e4e7eb;vertical-align:top}
.alert{border-left:4px solid #b00020;background:#fff4f4;padding:.6rem 1rem;border-radius:4px;margin-bottom:1rem}
.ok{border-left:4px solid #1a7f37;background:#f0fff4;padding:.6rem 1rem;border-radius:4px;margin-bottom:1rem}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
code{word-break:break-all;background:#f0f2f5;padding:.1rem .3rem;border-radius:4px}.filters{display:flex;flex-wrap:wrap;gap:0 1rem}.filters>div{min-width:10rem;flex:1}
.stat{font-size:1.6rem;font-weight:700}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:1rem}svg{max-width:100%;height:auto}.axis{display:flex;justify-content:space-between;font-size:.8rem;margin:.3rem 0 0}
`);

export type Tab = 'overview' | 'keys' | 'settings' | 'activity' | 'webhooks';
const TABS: Array<[Tab, string, string]> = [
  ['overview', 'Overview', '/dashboard'],
  ['keys', 'API keys', '/dashboard/keys'],
  ['settings', 'Settings', '/dashboard/settings'],
  ['activity', 'Activity', '/dashboard/activity'],
  ['webhooks', 'Webhooks', '/dashboard/webhooks'],
];

export interface Frame {
  nonce: string;
  csrf: string;
  accountName: string;
  tab: Tab;
  notice?: { kind: 'ok' | 'alert'; text: string } | null;
}

function doc(nonce: string, title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${title} · kya dashboard</title><style nonce="${nonce}">${STYLE}</style></head>
<body>${body}</body></html>`.value;
}

/** An ISO timestamp as `YYYY-MM-DD HH:MM:SS` (or shorter), read as UTC. */
function utc(iso: string, length = 19): string {
  return iso.slice(0, length).replace('T', ' ');
}

function csrfField(csrf: string): SafeHtml {
  return html`<input type="hidden" name="csrf" value="${csrf}">`;
}

export function page(f: Frame, title: string, body: SafeHtml): string {
  return doc(
    f.nonce,
    title,
    html`<header><strong>kya · ${f.accountName}</strong>
<nav aria-label="Dashboard">${TABS.map(([tab, label, href]) => html`<a href="${href}"${tab === f.tab ? new SafeHtml(' aria-current="page"') : ''}>${label}</a> `)}</nav>
<form method="post" action="/dashboard/signout">${csrfField(f.csrf)}<button type="submit">Sign out</button></form></header>
<main><h1>${title}</h1>${f.notice ? html`<div class="${f.notice.kind}" role="status">${f.notice.text}</div>` : ''}${body}</main>
<footer><a href="/docs">API reference</a> · <a href="/openapi.json">OpenAPI description</a></footer>`,
  );
}

export function signInPage(nonce: string, csrf: string, error: string | null): string {
  return doc(
    nonce,
    'Sign in',
    html`<main><div class="card"><h1>Sign in to the kya dashboard</h1>
${error ? html`<div class="alert" role="alert">${error}</div>` : ''}
<form method="post" action="/dashboard/signin">${csrfField(csrf)}
<label for="api_key">API key</label><input id="api_key" name="api_key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button></form>
<p class="muted">Your key is exchanged for a session cookie and is not stored in the browser. No key at hand? Ask your administrator for a one-time sign-in link.</p></div></main>`,
  );
}

export function linkPage(nonce: string, csrf: string, token: string, error: string | null): string {
  return doc(
    nonce,
    'Sign in',
    html`<main><div class="card"><h1>Sign in to the kya dashboard</h1>
${
  error
    ? html`<div class="alert" role="alert">${error}</div>`
    : html`<form method="post" action="/dashboard/login">${csrfField(csrf)}
<input type="hidden" name="token" value="${token}"><p>This sign-in link works once and expires 15 minutes after it was made.</p>
<button type="submit">Continue to the dashboard</button></form>`
}
<p><a href="/dashboard/signin">Sign in with an API key instead</a></p></div></main>`,
  );
}

export function overviewBody(o: {
  period: string;
  used: number;
  limit: number | null;
  days: Array<{ day: string; n: number }>;
  decisions: Array<{ decision: string; reason: string | null; n: number }>;
  outcomes: Array<{ status: string; n: number }>;
}): SafeHtml {
  const max = Math.max(1, ...o.days.map((d) => d.n));
  const W = 600,
    H = 160,
    bw = W / o.days.length;
  const bars = o.days.map((d, i) => {
    const h = Math.round((d.n / max) * (H - 20));
    return html`<rect x="${(i * bw + 2).toFixed(1)}" y="${H - h}" width="${(bw - 4).toFixed(1)}" height="${h}" fill="#0b5cd5"><title>${d.day}: ${d.n}</title></rect>`;
  });
  const allow = o.decisions.filter((d) => d.decision === 'allow').reduce((a, d) => a + d.n, 0);
  const denyReasons = o.decisions.filter((d) => d.decision === 'deny');
  return html`<div class="grid">
<div class="card"><h2>Quota this month (${o.period})</h2><p class="stat" id="quota-use">${o.used} / ${o.limit ?? 'unlimited'}</p><p class="muted">Metered calls this calendar month (UTC) against your limit.</p></div>
<div class="card"><h2>Sessions by outcome (30 days)</h2>${o.outcomes.length ? html`<table id="session-outcomes"><tr><th>Status</th><th>Sessions</th></tr>${o.outcomes.map((r) => html`<tr><td>${r.status}</td><td>${r.n}</td></tr>`)}</table>` : html`<p class="muted">No sessions yet.</p>`}</div></div>
<div class="card"><h2>Assess calls per day (last 30 days)</h2>
<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="Assess calls per day, last 30 days, peak ${max}">${bars}</svg>
<p class="axis muted"><span>${o.days[0].day}</span><span>peak ${max} a day</span><span>${o.days[o.days.length - 1].day}</span></p></div>
<div class="card"><h2>Assess decisions (30 days)</h2><table id="decisions"><tr><th>Decision</th><th>Reason</th><th>Count</th></tr>
<tr><td>allow</td><td></td><td>${allow}</td></tr>${denyReasons.map((r) => html`<tr><td>deny</td><td>${r.reason ?? ''}</td><td>${r.n}</td></tr>`)}</table>
<p class="muted">A denial with several reasons counts once per reason.</p></div>`;
}

export function keysBody(csrf: string, account: AccountView, newKey: { key: string; others: 'revoked' | 'kept' } | null): SafeHtml {
  const active = account.keys.filter((k) => !k.revoked_at);
  const enterprise = account.tier === 'enterprise';
  // Revoking is offered while another key would remain: the last key is only ever replaced (rotation).
  const revocable = enterprise && active.length > 1;
  return html`${newKey ? html`<div class="ok" role="status"><p>Your new API key (shown once; copy it now):</p><p><code id="new-key">${newKey.key}</code></p><p>${newKey.others === 'revoked' ? 'Every previous key has stopped working.' : 'Your other keys keep working.'}</p></div>` : ''}
<div class="card"><h2>Active keys</h2><table id="keys"><tr><th>Prefix</th><th>Created (UTC)</th><th>Last used (UTC)</th>${revocable ? html`<th><span class="sr-only">Actions</span></th>` : ''}</tr>
${active.map((k) => html`<tr><td><code>${k.prefix}</code></td><td>${utc(k.created_at)}</td><td>${k.last_used_at ? utc(k.last_used_at, 16) : 'never'}</td>${revocable ? html`<td><a href="/dashboard/keys/${k.id}/revoke" aria-label="Revoke key ${k.prefix}">Revoke…</a></td>` : ''}</tr>`)}</table>
<p class="muted">Last used: the latest successful authentication with the key, to the minute.</p></div>
${
  enterprise
    ? html`<div class="card"><h2>Add a key</h2><form method="post" action="/dashboard/keys/add">${csrfField(csrf)}<p>Enterprise accounts may hold several active keys (for example one per service), so each can be revoked on its own. The new key is shown once.</p>
<button type="submit">Add an API key</button></form></div>`
    : ''
}
<div class="card"><h2>Rotate</h2><form method="post" action="/dashboard/keys/rotate">${csrfField(csrf)}<p>Rotating issues one new key and revokes every active key at once, on every server.</p>
<button type="submit" class="danger">Rotate API key</button></form></div>`;
}

export function revokeKeyBody(csrf: string, key: { id: string; prefix: string; created_at: string; last_used_at: string | null }): SafeHtml {
  return html`<div class="card"><h2>Revoke the key <code>${key.prefix}</code>?</h2>
<p>Created ${utc(key.created_at)} UTC; last used ${key.last_used_at ? `${utc(key.last_used_at, 16)} UTC` : 'never'}.</p>
<p>Requests that present this key are refused at once, on every server. This cannot be undone; your other keys keep working.</p>
<form method="post" action="/dashboard/keys/${key.id}/revoke">${csrfField(csrf)}<button type="submit" class="danger">Revoke key ${key.prefix}</button></form>
<p><a href="/dashboard/keys">Cancel, keep the key</a></p></div>`;
}

/**
 * A form's messages and its fields' attributes: a field in error says so to assistive technology and points at
 * its message, and the first one (in `order`) takes focus.
 */
function formErrors(errors: Record<string, string>, order: readonly string[]) {
  const first = order.find((f) => errors[f]);
  return {
    err: (f: string) => (errors[f] ? html`<p class="alert" id="${f}-error">${errors[f]}</p>` : ''),
    state: (f: string) => new SafeHtml(errors[f] ? ` aria-invalid="true" aria-describedby="${f}-error"${f === first ? ' autofocus' : ''}` : ''),
  };
}

export function settingsBody(csrf: string, account: AccountView, b: Branding, errors: Record<string, string>, values?: Partial<Branding>): SafeHtml {
  const v = { ...b, ...values };
  const { err, state } = formErrors(errors, SETTINGS_FIELDS);
  const enabled = ENDPOINTS.filter((e) => !account.disabled_endpoints.includes(e));
  return html`<div class="card"><h2>Verify page branding</h2><form method="post" action="/dashboard/settings">${csrfField(csrf)}
<label for="display_name">Display name</label><input id="display_name" name="display_name" maxlength="80" value="${v.display_name ?? ''}"${state('display_name')}>${err('display_name')}
<label for="support_email">Support email</label><input id="support_email" name="support_email" type="email" maxlength="200" value="${v.support_email ?? ''}"${state('support_email')}>${err('support_email')}
<label for="logo_url">Logo URL (https)</label><input id="logo_url" name="logo_url" type="url" maxlength="500" value="${v.logo_url ?? ''}"${state('logo_url')}>${err('logo_url')}
<button type="submit">Save settings</button></form></div>
<div class="card"><h2>Plan</h2><table><tr><th>Tier</th><td>${account.tier}</td></tr><tr><th>Monthly quota</th><td>${account.quota ?? 'unlimited'}</td></tr>
<tr><th>Requests per second</th><td>${account.rps ?? 'unlimited'}</td></tr><tr><th>Enabled endpoints</th><td id="enabled-endpoints">${enabled.join(', ') || 'none'}</td></tr></table>
<p class="muted">Plan and limits are changed by kya support.</p></div>`;
}

export interface ActivityQuery {
  decision: string;
  reason: string;
  kind: string;
  from: string;
  to: string;
}

export function activityBody(
  q: ActivityQuery,
  rows: AuditRow[],
  next: string | null,
  csvHref: string,
  sessions: Array<{ id: string; status: string; context: string | null; created_at: Date }>,
  credentials: MerchantCredentialView[],
): SafeHtml {
  const when = (d: Date | null, length = 16) => (d ? utc(d.toISOString(), length) : 'never');
  const opt = (value: string, label: string, current: string) =>
    html`<option value="${value}"${value === current ? new SafeHtml(' selected') : ''}>${label}</option>`;
  return html`<div class="card"><h2>Assess audit trail</h2><form method="get" action="/dashboard/activity" class="filters">
<div><label for="decision">Decision</label><select id="decision" name="decision">${opt('', 'Any', q.decision)}${opt('allow', 'allow', q.decision)}${opt('deny', 'deny', q.decision)}</select></div>
<div><label for="reason">Reason</label><select id="reason" name="reason">${opt('', 'Any', q.reason)}${DECISION_REASONS.map((r) => opt(r, r, q.reason))}</select></div>
<div><label for="kind">Identity method</label><select id="kind" name="kind">${opt('', 'Any', q.kind)}${opt('wallet', 'wallet', q.kind)}${opt('operator_token', 'operator token', q.kind)}</select></div>
<div><label for="from">From (UTC date)</label><input id="from" name="from" type="date" value="${q.from}"></div>
<div><label for="to">To (UTC date, inclusive)</label><input id="to" name="to" type="date" value="${q.to}"></div>
<div><button type="submit">Apply filters</button></div></form>
<p><a href="${csvHref}" id="csv-link">Export CSV</a> (up to 100,000 rows with these filters)</p>
<table id="audit"><tr><th>Time (UTC)</th><th>Decision</th><th>Reasons</th><th>Identity</th><th>Request</th></tr>
${rows.map((r) => html`<tr><td>${utc(r.created_at.toISOString())}</td><td>${r.decision}</td><td>${r.reasons.join(', ')}</td><td>${r.identity_kind}: <code>${r.identity_value.slice(0, 14)}…</code></td><td><code>${r.request_id}</code></td></tr>`)}</table>
${rows.length === 0 ? html`<p class="muted">No matching calls.</p>` : ''}${next ? html`<p><a href="${next}" id="next-page">Older entries</a></p>` : ''}</div>
<div class="card"><h2>Verification sessions</h2><table id="sessions"><tr><th>Created (UTC)</th><th>Session</th><th>Status</th><th>Context</th></tr>
${sessions.map((s) => html`<tr><td>${utc(s.created_at.toISOString())}</td><td><code>${s.id}</code></td><td>${s.status}</td><td>${s.context ?? ''}</td></tr>`)}</table>
${sessions.length === 0 ? html`<p class="muted">No verification sessions yet.</p>` : ''}</div>
<div class="card"><h2 id="credentials-heading">Operator credentials</h2>
<p class="muted">Credentials minted with your API key, and those your verification sessions delivered to operators (named by the handle your assess results and webhooks use). Latest 50; times in UTC.</p>
${
  credentials.length === 0
    ? html`<p class="muted">No credentials yet.</p>`
    : html`<table id="credentials" aria-labelledby="credentials-heading"><tr><th>Credential</th><th>ID</th><th>Operator</th><th>Minted by</th><th>Status</th><th>Created</th><th>Expires</th><th>Last used</th></tr>
${credentials.map((c) => html`<tr><td><code>${c.prefix}</code>${c.label ? html` ${c.label}` : ''}</td><td><code>${c.id.slice(0, 8)}</code></td><td>${c.operator_handle ? html`<code>${c.operator_handle}</code>` : 'this account'}</td><td>${c.source === 'api' ? 'API' : c.source}</td><td>${c.status}</td><td>${when(c.created_at)}</td><td>${when(c.expires_at)}</td><td>${when(c.last_used_at)}</td></tr>`)}</table>`
}</div>`;
}

export function webhooksBody(
  csrf: string,
  endpoints: WebhookEndpointView[],
  errors: Record<string, string>,
  values: { url?: string; types?: string[] },
  created: { id: string; secret: string } | null,
): SafeHtml {
  const types = values.types ?? [...WEBHOOK_EVENT_TYPES];
  const { err, state } = formErrors(errors, ['url']);
  return html`${created ? html`<div class="ok" role="status">Endpoint added. Its signing secret: <code id="created-secret">${created.secret}</code></div>` : ''}
<div class="card"><h2>Endpoints</h2>${
    endpoints.length === 0
      ? html`<p class="muted">No endpoints yet.</p>`
      : html`<table id="endpoints"><tr><th>URL</th><th>Events</th><th></th></tr>
${endpoints.map((e) => html`<tr><td><a href="/dashboard/webhooks/${e.id}">${e.url}</a></td><td>${e.event_types.join(', ')}</td><td><a href="/dashboard/webhooks/${e.id}">Details and delivery log</a></td></tr>`)}</table>`
  }</div>
<div class="card"><h2>Add an endpoint</h2><form method="post" action="/dashboard/webhooks">${csrfField(csrf)}
<label for="url">Endpoint URL</label><input id="url" name="url" type="url" required value="${values.url ?? ''}" placeholder="https://example.com/kya-webhooks"${state('url')}>${err('url')}
<fieldset${errors.event_types ? new SafeHtml(' aria-describedby="event_types-error"') : ''}><legend>Event types</legend>${WEBHOOK_EVENT_TYPES.map((t) => html`<label class="check"><input type="checkbox" name="event_types" value="${t}"${types.includes(t) ? new SafeHtml(' checked') : ''}>${t}</label>`)}</fieldset>
${err('event_types')}<button type="submit">Add endpoint</button></form></div>`;
}

export function endpointBody(csrf: string, e: WebhookEndpointView, secret: string, deliveries: DeliveryLogRow[]): SafeHtml {
  return html`<div class="card"><h2>${e.url}</h2><p>Events: ${e.event_types.join(', ')}</p>
<label for="secret">Signing secret</label><input id="secret" readonly value="${secret}">
<form method="post" action="/dashboard/webhooks/${e.id}/roll">${csrfField(csrf)}<button type="submit" class="secondary">Roll signing secret</button></form>
<p><a href="/dashboard/webhooks/${e.id}/remove">Remove endpoint…</a></p></div>
<div class="card"><h2>Delivery log</h2>${
    deliveries.length === 0
      ? html`<p class="muted">No deliveries yet.</p>`
      : html`<table id="deliveries"><tr><th>Created (UTC)</th><th>Event</th><th>Status</th><th>Attempts</th><th>Last response</th><th></th></tr>
${deliveries.map(
  (
    d,
  ) => html`<tr><td>${utc(d.created_at.toISOString())}</td><td>${d.type} <code>${d.event_id}</code></td><td>${d.status}</td><td>${d.attempts}</td><td>${d.last_status_code ?? ''} ${d.last_error ?? ''}</td>
<td><form method="post" action="/dashboard/webhooks/deliveries/${d.id}/resend">${csrfField(csrf)}<input type="hidden" name="endpoint" value="${e.id}"><button type="submit" class="secondary">Send again</button></form></td></tr>`,
)}</table>`
  }</div>
<p><a href="/dashboard/webhooks">Back to webhooks</a></p>`;
}

export function removeEndpointBody(csrf: string, e: WebhookEndpointView): SafeHtml {
  return html`<div class="card"><h2>Remove <code>${e.url}</code>?</h2>
<p>Events: ${e.event_types.join(', ')}. No further events are sent to it, deliveries still pending are dropped, and its delivery log is deleted. This cannot be undone.</p>
<form method="post" action="/dashboard/webhooks/${e.id}/delete">${csrfField(csrf)}<button type="submit" class="danger">Remove endpoint</button></form>
<p><a href="/dashboard/webhooks/${e.id}">Cancel, keep the endpoint</a></p></div>`;
}

export function messageDoc(nonce: string, title: string, text: string): string {
  return doc(nonce, title, html`<main><div class="card"><h1>${title}</h1><p>${text}</p><p><a href="/dashboard/signin">Sign in</a></p></div></main>`);
}
