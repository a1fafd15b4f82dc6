// The dashboard's forms and the activity filter as joi schemas: each returns typed, already-valid input for the
// services, or one message per field for the page to show beside it.
import Joi from 'joi';
import { DECISION_REASONS } from '../../shared/types';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../shared/webhookSignature';
import { fail } from '../http/validate';
import { formValidator, type FormOutcome } from '../http/forms';
import type { Branding } from '../services/accounts';
import { checkEndpointUrl } from '../webhooks/endpointUrl';

/** A secret typed or pasted into a sign-in form (API key, one-time link token). */
const secret = Joi.string().trim().max(512).required();

const checkKeySignIn = formValidator<{ api_key: string }>(Joi.object({ api_key: secret }), { api_key: 'Enter your API key.' });
const checkLinkSignIn = formValidator<{ token: string }>(Joi.object({ token: secret }), { token: 'The sign-in link is incomplete.' });

/** The API key of the sign-in form, or null when none was entered. */
export function parseKeySignIn(body: unknown): string | null {
  const checked = checkKeySignIn(body);
  return checked.ok ? checked.value.api_key : null;
}

/** The token of the one-time link's sign-in form, or null when it is missing. */
export function parseLinkSignIn(body: unknown): string | null {
  const checked = checkLinkSignIn(body);
  return checked.ok ? checked.value.token : null;
}

export const SETTINGS_FIELDS = ['display_name', 'support_email', 'logo_url'] as const;

/** An empty field clears the setting. */
const optional = (schema: Joi.StringSchema) => schema.empty('').default(null);

const checkSettings = formValidator<Branding>(
  Joi.object({
    display_name: optional(Joi.string().trim().max(80)),
    support_email: optional(
      Joi.string()
        .trim()
        .max(200)
        .pattern(/^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/),
    ),
    logo_url: optional(
      Joi.string()
        .trim()
        .max(500)
        .custom((value: string, helpers) => {
          try {
            const url = new URL(value);
            if (url.protocol === 'https:' && !url.username && !url.password) return value;
          } catch {
            // not a URL: reported below
          }
          return helpers.error('any.invalid');
        }),
    ),
  }),
  {
    display_name: 'Use at most 80 characters.',
    support_email: 'Enter an email address such as support@example.com.',
    logo_url: 'Enter an https:// URL of an image.',
  },
);

/** The verify page branding form. */
export function parseSettingsForm(body: unknown): FormOutcome<Branding> {
  return checkSettings(body);
}

export interface WebhookEndpointInput {
  url: string;
  eventTypes: WebhookEventType[];
}

const webhookSchema = Joi.object({
  url: Joi.string()
    .trim()
    .required()
    .custom((value: string, helpers) => {
      const checked = checkEndpointUrl(value, (helpers.prefs.context as { production: boolean }).production);
      return 'url' in checked ? checked.url : fail(helpers, 'bad_request', checked.problem);
    }),
  // One ticked box arrives as a string, several as a list.
  event_types: Joi.array()
    .items(Joi.string().valid(...WEBHOOK_EVENT_TYPES))
    .single()
    .unique()
    .min(1)
    .required(),
});

const checkWebhook = formValidator<{ url: string; event_types: WebhookEventType[] }>(webhookSchema, {
  url: 'Enter a full URL, for example https://example.com/kya-webhooks.',
  event_types: 'Choose at least one event type.',
});

/** The add-endpoint form; `production` decides whether a localhost receiver over http is allowed. */
export function parseWebhookForm(body: unknown, production: boolean): FormOutcome<WebhookEndpointInput> {
  const checked = checkWebhook(body, { production });
  return checked.ok ? { ok: true, value: { url: checked.value.url, eventTypes: checked.value.event_types } } : checked;
}

const checkResend = formValidator<{ endpoint: string }>(Joi.object({ endpoint: Joi.string().trim().guid().required() }), {
  endpoint: 'No such endpoint.',
});

/** The endpoint whose page a resend returns to, or null when the form does not name one. */
export function parseResendForm(body: unknown): string | null {
  const checked = checkResend(body);
  return checked.ok ? checked.value.endpoint : null;
}

export interface ActivityFilter {
  decision: '' | 'allow' | 'deny';
  reason: string;
  kind: '' | 'wallet' | 'operator_token';
  /** YYYY-MM-DD */
  from: string;
  to: string;
  /** The id of the last row shown: the page starts below it (null or absent: from the newest). */
  before?: number | null;
}

/** A filter value that is not one of the choices is ignored (the filter shows "any"), not refused. */
const choice = (...values: string[]) =>
  Joi.string()
    .valid(...values)
    .failover('')
    .default('');
const day = Joi.string()
  .pattern(/^\d{4}-\d{2}-\d{2}$/)
  .custom((value: string, helpers) => (Number.isNaN(Date.parse(`${value}T00:00:00Z`)) ? helpers.error('any.invalid') : value))
  .failover('')
  .default('');

const activitySchema = Joi.object({
  decision: choice('allow', 'deny'),
  reason: choice(...DECISION_REASONS),
  kind: choice('wallet', 'operator_token'),
  from: day,
  to: day,
  before: Joi.string()
    .pattern(/^\d{1,18}$/)
    .custom((value: string) => Number(value))
    .failover(null),
}).prefs({ convert: true, allowUnknown: true, stripUnknown: true });

/** The activity page's filter from its query string; values it does not know are dropped. */
export function parseActivityFilter(query: unknown): ActivityFilter {
  const { value } = activitySchema.validate(query ?? {}) as { value: ActivityFilter };
  return value;
}
