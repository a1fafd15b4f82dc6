// Signed webhooks: events are recorded in the caller's transaction (the outbox) with one delivery per
// subscribed endpoint; after commit each delivery is queued, sent through the safe fetcher, logged per attempt
// and retried with exponential backoff until it succeeds or its retry window (3 days by default) runs out.
// A periodic sweep re-queues anything due (after a crash, or a queue that lost a job): at least once.
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { JobQueue } from '../jobs/queue';
import { FetchRefusedError, SafeHttpFetcher, isPublicAddress, type HttpFetcher } from '../chain/safeFetch';
import { ApiError } from '../../shared/errors';
import { decryptJson, encryptJson, randomBase62 } from '../crypto';
import { WEBHOOK_SIGNATURE_HEADER, signatureHeader, type WebhookEvent, type WebhookEventType } from '../../shared/webhookSignature';
import type { WebhookEndpointRow, WebhooksRepository } from '../repositories/webhooks';
import type { WebhookEventInput } from './events';

const DELIVER_JOB = 'webhooks.deliver';
const SWEEP_JOB = 'webhooks.sweep';
const MAX_ENDPOINTS = 10;
const MAX_DELAY_MS = 6 * 3600 * 1000;

export interface WebhookEndpointView {
  id: string;
  url: string;
  event_types: WebhookEventType[];
  created_at: Date;
}

export interface WebhookServiceOptions {
  db: Knex;
  repo: WebhooksRepository;
  jobs: JobQueue;
  config: Config;
  logger: Logger;
  now: () => Date;
  /** Outbound fetcher for deliveries (default: the safe fetcher, private addresses refused in production). */
  fetcher?: HttpFetcher;
}

export class WebhookService {
  private readonly fetcher: HttpFetcher;
  /** Run by every sweep before looking for due deliveries (expires overdue sessions, whose events then go out). */
  expireSessions: () => Promise<unknown> = async () => undefined;
  private readonly db: Knex;
  private readonly repo: WebhooksRepository;
  private readonly jobs: JobQueue;
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly now: () => Date;

  constructor(options: WebhookServiceOptions) {
    const { config, fetcher } = options;
    this.db = options.db;
    this.repo = options.repo;
    this.jobs = options.jobs;
    this.config = config;
    this.logger = options.logger;
    this.now = options.now;
    const production = config.env === 'production';
    // Outside production a receiver on localhost (plain http) is allowed for development; in production only
    // https to public addresses, re-vetted on every attempt. Redirects are not followed: a 3xx is a failure.
    this.fetcher =
      fetcher ??
      new SafeHttpFetcher({
        timeoutMs: config.webhooks.timeoutMs,
        maxBytes: 64 * 1024,
        maxRedirects: 0,
        protocols: production ? ['https:'] : ['https:', 'http:'],
        isAllowedAddress: production ? isPublicAddress : () => true,
        userAgent: 'kya-webhooks/1 (+https://kya.dev)',
      });
  }

  async start(runWorkers: boolean): Promise<void> {
    if (!runWorkers) return;
    this.jobs.process<{ id: string }>(DELIVER_JOB, (data) => this.deliver(data.id), { concurrency: 4 });
    this.jobs.process(SWEEP_JOB, async () => {
      await this.sweep();
    });
    await this.jobs.repeat(SWEEP_JOB, {}, this.config.webhooks.sweepSeconds * 1000);
  }

  // ---- the outbox ----

  /** Records an event for `accountId` inside `trx`; its deliveries are queued once the transaction commits. */
  async emit({ accountId, type, data }: WebhookEventInput, trx: Knex.Transaction): Promise<void> {
    const id = 'evt_' + randomBase62(24);
    const ids = await this.repo.recordEvent({ id, accountId, type, data, at: this.now() }, trx);
    if (ids.length === 0) return;
    // Queued only after commit (a worker must see the rows); if this is lost, the sweep finds them.
    trx.executionPromise
      .then(
        () => Promise.all(ids.map((d) => this.enqueue(d, 1, 0))),
        () => undefined,
      )
      .catch((err: Error) => this.logger.warn({ err: err.message }, 'webhook delivery not queued; the sweep will pick it up'));
  }

  private enqueue(deliveryId: string, attempt: number, delayMs: number) {
    return this.jobs.add(DELIVER_JOB, { id: deliveryId }, { jobId: `${deliveryId}:${attempt}`, delayMs, attempts: 1 });
  }

  async sweep(): Promise<number> {
    await this.expireSessions().catch((err: Error) => this.logger.warn({ err: err.message }, 'could not expire overdue sessions'));
    const due = await this.repo.dueDeliveries({ now: this.now(), limit: 200 });
    for (const d of due) await this.enqueue(d.id, d.attempts + 1, 0);
    return due.length;
  }

  // ---- delivery ----

  /** One attempt at one delivery (a no-op when it is not due or another worker holds it). Never throws for the receiver's sake. */
  async deliver(deliveryId: string): Promise<void> {
    const now = this.now();
    const lease = new Date(now.getTime() + this.config.webhooks.timeoutMs + 60_000);
    const claimed = await this.repo.claim({ id: deliveryId, now, leaseUntil: lease });
    if (!claimed) return;
    const event: WebhookEvent = {
      id: claimed.event_id,
      type: claimed.type,
      created: Math.floor(claimed.event_created_at.getTime() / 1000),
      data: claimed.data,
    };
    const body = JSON.stringify(event);
    const secret = decryptJson<string>(this.config.piiKey, claimed.secret_encrypted);
    const timestamp = Math.floor(now.getTime() / 1000);
    // A measured duration, not a business time: the monotonic clock.
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const result = await this.fetcher.fetch(claimed.url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          [WEBHOOK_SIGNATURE_HEADER.toLowerCase()]: signatureHeader(secret, timestamp, body),
          'kya-event-id': claimed.event_id,
          'kya-event-type': claimed.type,
        },
      });
      statusCode = result.status;
      if (statusCode < 200 || statusCode >= 300) error = `receiver answered ${statusCode}`;
    } catch (err) {
      error = err instanceof FetchRefusedError ? `${err.reason}: ${err.message}` : 'network error';
    }
    const durationMs = Math.round(performance.now() - started);
    const at = this.now();
    if (!error) {
      await this.repo.recordAttempt({ deliveryId, at, statusCode, error, durationMs, outcome: { status: 'succeeded', at } });
      return;
    }
    const delay = Math.min(this.config.webhooks.retryBaseMs * 2 ** (claimed.attempts - 1), MAX_DELAY_MS);
    const next = new Date(at.getTime() + delay);
    const windowEnd = claimed.retry_window_start.getTime() + this.config.webhooks.maxAgeHours * 3600 * 1000;
    if (next.getTime() > windowEnd) {
      await this.repo.recordAttempt({ deliveryId, at, statusCode, error, durationMs, outcome: { status: 'failed', at } });
      this.logger.warn({ delivery: deliveryId, endpoint: claimed.endpoint_id, attempts: claimed.attempts }, 'webhook delivery given up');
      return;
    }
    await this.repo.recordAttempt({ deliveryId, at, statusCode, error, durationMs, outcome: { status: 'pending', nextAttemptAt: next } });
    await this.enqueue(deliveryId, claimed.attempts + 1, delay).catch(() => undefined); // the sweep covers a lost add
  }

  // ---- endpoints (dashboard) ----

  async listEndpoints(accountId: string): Promise<WebhookEndpointView[]> {
    return (await this.repo.listEndpoints({ accountId })).map(view);
  }

  /**
   * Adds an endpoint whose URL passed `checkEndpointUrl` and that subscribes to at least one event type. Throws a
   * 409 when the account already has the most endpoints it may have.
   */
  async addEndpoint(accountId: string, input: { url: string; eventTypes: WebhookEventType[] }): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
    if ((await this.repo.countEndpoints({ accountId })) >= MAX_ENDPOINTS) {
      throw new ApiError('conflict', `An account can have at most ${MAX_ENDPOINTS} endpoints. Remove one to add another.`);
    }
    const secret = newSigningSecret();
    const row = await this.repo.insertEndpoint({
      accountId,
      url: input.url,
      eventTypes: [...new Set(input.eventTypes)],
      secretEncrypted: encryptJson(this.config.piiKey, secret),
    });
    return { endpoint: view(row), secret };
  }

  async removeEndpoint(accountId: string, id: string): Promise<boolean> {
    return UUID_RE.test(id) ? this.repo.deleteEndpoint({ accountId, id }) : false;
  }

  async secret(accountId: string, id: string): Promise<string | null> {
    const row = UUID_RE.test(id) ? await this.repo.findEndpoint({ accountId, id }) : undefined;
    return row ? decryptJson<string>(this.config.piiKey, row.secret_encrypted) : null;
  }

  /** A new signing secret, effective for the next attempt. */
  async rollSecret(accountId: string, id: string): Promise<string | null> {
    if (!UUID_RE.test(id)) return null;
    const secret = newSigningSecret();
    return (await this.repo.updateSecret({ accountId, id, secretEncrypted: encryptJson(this.config.piiKey, secret) })) ? secret : null;
  }

  async deliveries(accountId: string, endpointId: string, limit = 50) {
    return UUID_RE.test(endpointId) ? this.repo.listDeliveries({ accountId, endpointId, limit }) : [];
  }

  async resend(accountId: string, deliveryId: string): Promise<boolean> {
    if (!UUID_RE.test(deliveryId)) return false;
    const row = await this.repo.resend({ accountId, id: deliveryId, now: this.now() });
    if (!row) return false;
    await this.enqueue(row.id, row.attempts + 1, 0).catch(() => undefined);
    return true;
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function newSigningSecret(): string {
  return 'whsec_' + crypto.randomBytes(24).toString('base64url');
}

function view(row: WebhookEndpointRow): WebhookEndpointView {
  return { id: row.id, url: row.url, event_types: row.event_types, created_at: row.created_at };
}
