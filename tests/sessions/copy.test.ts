// Agent-facing session text follows configuration: the link lifetime it announces is SESSION_TTL_SECONDS and
// the poll cadence is POLL_INTERVAL_SECONDS, never a hard-coded "one hour" or "5 s".
import request from 'supertest';
import { durationText, retryWithBackoff } from '../../server/services/agentCopy';
import { POLL_INTERVAL_SECONDS } from '../../server/services/sessions';
import { createHarness, createMerchant, resetTables, type Harness } from '../support/harness';
import { SESSION_TABLES } from './support';

describe('durationText', () => {
  it.each([
    [3600, 'one hour'],
    [7200, '2 hours'],
    [1800, '30 minutes'],
    [60, 'one minute'],
    [90, '90 seconds'],
    [1, 'one second'],
  ])('says %i seconds as "%s"', (seconds, text) => {
    expect(durationText(seconds)).toBe(text);
  });
});

describe('session text with SESSION_TTL_SECONDS=1800', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ env: { SESSION_TTL_SECONDS: '1800' } });
  });
  beforeEach(() => resetTables(h.deps, SESSION_TABLES));
  afterAll(() => h.close());

  it('announces the configured link lifetime and poll interval to the agent and the user', async () => {
    const { apiKey } = await createMerchant(h.deps);
    const before = Date.now();
    const res = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    expect(res.status).toBe(200);
    const b = res.body;
    expect(Date.parse(b.expires_at) - before).toBeLessThanOrEqual(1800_000 + 5_000);
    expect(b.next_steps.user_message).toBe('To continue, verify your identity once using the link. It takes a few minutes and the link expires in 30 minutes.');
    expect(b.next_steps.steps[1]).toBe(
      `Poll GET ${b.poll_url} every ${POLL_INTERVAL_SECONDS} seconds with the header X-Poll-Secret: <poll_secret>. Never put the poll secret in a URL.`,
    );
    expect(b.agent_memory.bootstrap.on_denial_with_verify_url).toBe(
      `deliver verify_url to the user, poll poll_url with X-Poll-Secret every ${POLL_INTERVAL_SECONDS} s`,
    );
  });

  it('tells a person who opens an expired link how long links are valid, from the same setting', async () => {
    const { apiKey } = await createMerchant(h.deps);
    const { body } = await request(h.app).post('/v1/sessions').set('X-API-Key', apiKey).send({});
    await h.deps
      .db('sessions')
      .where({ id: body.session_id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const page = await request(h.app).get(`/verify/${body.session_id}`);
    expect(page.status).toBe(410);
    expect(page.text).toContain('Verification links are valid for 30 minutes. Ask your agent to start a new verification and open the new link.');
  });
});

describe('retry advice', () => {
  it('waits what the Retry-After next to it says', () => {
    expect(retryWithBackoff(5).steps.slice(0, 2)).toEqual([
      'Wait 5 seconds, then retry the same request.',
      'Double the wait after each failure, up to 30 seconds.',
    ]);
    expect(retryWithBackoff(60).steps.slice(0, 2)).toEqual([
      'Wait one minute, then retry the same request.',
      'Double the wait after each failure, up to one minute.',
    ]);
  });
});
