// Runs in every test file (jest setupFilesAfterEnv): every JSON response an app built by the test harness
// sends is recorded, and after the file's tests each is checked against the API description; the file fails
// if any field, type, status, error code or rate/quota header of a documented endpoint is not described there.
// Checking after the tests, not inside res.json, keeps schema compilation out of the timings tests measure.
import express from 'express';
import { checkResponse, type ObservedResponse } from './openapi';

const documentedApps = new WeakSet<object>();
const seen = new Map<string, ObservedResponse>();

/** The harness registers the apps it builds (the real server app); other test apps are not checked. */
export function checkResponsesOf(app: object): void {
  documentedApps.add(app);
}

const TRACKED = /^(x-ratelimit-|x-quota-|retry-after$)/;

const response = express.response as express.Response & { json: (body: unknown) => express.Response };
const originalJson = response.json;
response.json = function json(this: express.Response, body: unknown) {
  if (documentedApps.has(this.app) && this.req) {
    const headers = Object.fromEntries(Object.entries(this.getHeaders()).filter(([k]) => TRACKED.test(k)));
    const observed = { method: this.req.method, path: this.req.originalUrl, status: this.statusCode, headers, body: JSON.stringify(body) };
    // A snapshot (the body may be changed after it is sent); identical responses are checked once.
    seen.set(JSON.stringify([observed.method, observed.path.split('?')[0], observed.status, Object.keys(headers).sort(), observed.body]), observed);
  }
  return originalJson.call(this, body);
};

function checkSeen(): void {
  const violations = new Set<string>();
  for (const r of seen.values()) {
    try {
      for (const problem of checkResponse({ ...r, body: r.body === undefined ? undefined : JSON.parse(r.body as string) }) ?? []) violations.add(problem);
    } catch (err) {
      violations.add(`${r.method} ${r.path} ${r.status}: the description could not be applied (${(err as Error).message})`);
    }
  }
  seen.clear();
  if (violations.size) throw new Error(`Responses the API description does not describe (server/openapi/schemas.ts):\n${[...violations].join('\n')}`);
}

// Outside jest (a benchmark script that builds its app with the harness) there is nothing to check.
if (typeof afterAll === 'function') afterAll(checkSeen);
